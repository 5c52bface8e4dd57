//go:build nok8s

package cluster

import (
	"errors"

	"github.com/asynkron/protoactor-go/cluster"
)

func k8sProvider() (cluster.ClusterProvider, error) {
	return nil, errors.New("cluster: this veild was built with -tags nok8s, without the Kubernetes provider: use --cluster-provider automanaged or a default build")
}
