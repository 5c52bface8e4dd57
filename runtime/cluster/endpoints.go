package cluster

import (
	"log/slog"

	"github.com/asynkron/protoactor-go/cluster"
)

// Connections to other members (issue 37, the 30 s outliers of the heal
// benchmark). protoactor keeps one remote endpoint (a writer actor with a
// gRPC stream) per address, and it loses messages without a dead letter in
// two places that a member's restart at its own address reaches:
//
//   - When an endpoint ends (its stream broke, the peer said goodbye, or a
//     member left: EndpointTerminatedEvent), its writer stops, and what it
//     held or had just written into the dying stream is gone. A forwarded
//     request among them would wait out its deadline (30 s in the heal
//     check), though its answer can no longer come.
//   - An endpoint made after the old process left (an answer to a request
//     the old process had forwarded here creates one, and it connects to the
//     old process while that one drains) stays in protoactor's table for
//     the address. When the new process joins, requests routed to it are
//     written to that stale stream and lost.
//
// So every EndpointTerminatedEvent fails the requests in flight to its
// address at once (host.ErrMemberLost: retriable; they may or may not have
// run, as when a member dies with them), and a new process at an address
// where another one was seen gets a fresh endpoint before anything is
// routed to it.

// onEndpointLost fails the requests in flight to addr: the endpoint that
// carried them is gone (EndpointTerminatedEvent).
func (m *Member) onEndpointLost(addr string) {
	m.mu.Lock()
	if addr == m.self {
		m.mu.Unlock()
		return
	}
	calls := m.inflight[addr]
	delete(m.inflight, addr)
	m.mu.Unlock()
	for c := range calls {
		c.why = "the connection to member " + addr + " ended with the request in flight"
		close(c.lost)
	}
	if len(calls) > 0 {
		m.cfg.Log.Info("cluster connection to a member ended", slog.String("address", addr), slog.Int("requests_failed_over", len(calls)))
	}
}

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
