//go:build !nok8s

package cluster

import (
	"fmt"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/k8s"
)

// k8sProvider is protoactor's Kubernetes provider: members are the pods of
// the namespace, found through the API server with the pod's service
// account. Builds with -tags nok8s leave client-go out (docs/cluster.md).
func k8sProvider() (cluster.ClusterProvider, error) {
	p, err := k8s.New()
	if err != nil {
		return nil, fmt.Errorf("cluster: the k8s provider needs to run in a pod with a service account that may list, watch and patch pods (docs/cluster.md): %w", err)
	}
	return p, nil
}
