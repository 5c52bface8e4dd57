package cluster

import (
	"github.com/asynkron/protoactor-go/cluster"
)

// Connections to other members (issue 37, the heal benchmark's 30 s
// outliers). protoactor keeps one remote endpoint (a writer actor with a
// gRPC stream) per address. An endpoint made after a member's old process
// left the topology (an answer to a request that process had forwarded
// here makes one) can still be connected to that process while it drains,
// and stays in protoactor's table for the address: when the new process
// joins, requests routed to it would be written to the stale stream and
// lost, and so would the probes that look for them (answers.go). So a new
// process at an address where another one was seen gets a fresh endpoint
// before anything is routed to it.
//
// What an endpoint that ends still held is lost too, without a dead
// letter, on either side of a request; the probes of answers.go find those
// requests and answers, instead of failing every request in flight on an
// EndpointTerminatedEvent: most of them were written already and are
// answered over the owner's own connection.

// replacedAddresses notes which process (member id) holds each address of
// t and returns the addresses that a member of t.Joined took over from
// another process seen there before: their endpoints may still be
// connected to that one.
func (m *Member) replacedAddresses(t *cluster.ClusterTopology) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.addrIDs == nil {
		m.addrIDs = map[string]string{}
	}
	var replaced []string
	for _, mem := range t.Joined {
		addr := mem.Address()
		if prev, ok := m.addrIDs[addr]; ok && prev != mem.Id && addr != m.self {
			replaced = append(replaced, addr)
		}
	}
	for _, mem := range t.Members {
		m.addrIDs[mem.Address()] = mem.Id
	}
	return replaced
}
