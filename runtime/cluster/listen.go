package cluster

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	channelzpb "google.golang.org/grpc/channelz/grpc_channelz_v1"
	channelzsvc "google.golang.org/grpc/channelz/service"
	"google.golang.org/grpc/credentials/insecure"
)

// dialFrom makes remoting connections leave from ip.
func dialFrom(ip net.IP) []grpc.DialOption {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}
	return []grpc.DialOption{
		// protoactor's default, which these options replace: the remoting
		// is plain gRPC (docs/cluster.md: run it on a private network).
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		}),
	}
}

// With an advertised address, protoactor reports that address and not the
// one its listener bound; with port 0 nobody would know where the member
// listens (a proxy or NAT rule in front of it needs to). gRPC's channelz
// registry knows every server's listen sockets: this member's is the one
// that was not there before it started.

// channelz is the in-process channelz service, captured from its
// registration instead of being served.
var channelz = func() channelzpb.ChannelzServer {
	var r capture
	channelzsvc.RegisterChannelzServiceToServer(&r)
	return r.impl
}()

type capture struct{ impl channelzpb.ChannelzServer }

func (c *capture) RegisterService(_ *grpc.ServiceDesc, impl any) {
	c.impl, _ = impl.(channelzpb.ChannelzServer)
}

// listenSockets lists the ids of every gRPC listen socket of the process.
func listenSockets() map[int64]bool {
	out := map[int64]bool{}
	if channelz == nil {
		return out
	}
	ctx := context.Background()
	var start int64
	for {
		resp, err := channelz.GetServers(ctx, &channelzpb.GetServersRequest{StartServerId: start})
		if err != nil {
			return out
		}
		for _, s := range resp.GetServer() {
			for _, ls := range s.GetListenSocket() {
				out[ls.GetSocketId()] = true
			}
			start = s.GetRef().GetServerId() + 1
		}
		if resp.GetEnd() || len(resp.GetServer()) == 0 {
			return out
		}
	}
}

// boundRemoting finds the address of the remoting listener that appeared
// since before (on host). protoactor serves it from a goroutine of its own,
// so it may take a moment to register.
func boundRemoting(host string, before map[int64]bool) (string, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if addr, ok := findBound(host, before); ok {
			return addr, nil
		}
		if time.Now().After(deadline) {
			return "", errors.New("cluster: cannot find the port the remoting listener bound; give --cluster-addr a fixed port")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func findBound(host string, before map[int64]bool) (string, bool) {
	want := net.ParseIP(host)
	for id := range listenSockets() {
		if before[id] {
			continue
		}
		resp, err := channelz.GetSocket(context.Background(), &channelzpb.GetSocketRequest{SocketId: id})
		if err != nil {
			continue
		}
		tcp := resp.GetSocket().GetLocal().GetTcpipAddress()
		if tcp == nil {
			continue
		}
		ip := net.IP(tcp.GetIpAddress())
		if want != nil && !want.IsUnspecified() && !ip.Equal(want) {
			continue
		}
		return net.JoinHostPort(host, strconv.Itoa(int(tcp.GetPort()))), true
	}
	return "", false
}
