package main

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The real binary applies --body-timeout: a connection that trickles its
// body gets a 408 and is closed, while /health is answered. (The 1,000
// connection load is httpapi's TestTricklingBodiesAreCut, on the same
// httpapi.Server.HTTPServer that veild serves.)
func TestServeCutsATricklingBody(t *testing.T) {
	p := start(t, t.TempDir(), "--body-timeout", "1s", "--idle-timeout", "1s")
	key := keyRE.FindString(p.stdout.String())
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /agent/create HTTP/1.1\r\nHost: veil.test\r\nAuthorization: Bearer %s\r\nContent-Length: 65536\r\n\r\n{", key)
	closed := make(chan string, 1)
	go func() {
		br := bufio.NewReader(c)
		line, _ := br.ReadString('\n')
		for {
			if _, err := br.ReadByte(); err != nil {
				break
			}
		}
		closed <- strings.TrimSpace(line)
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case status := <-closed:
			if status != "HTTP/1.1 408 Request Timeout" {
				t.Fatalf("trickling body answered %q", status)
			}
			if s, _ := call(t, "GET", "http://"+p.addr+"/health", "", nil); s != 200 {
				t.Fatalf("health = %d", s)
			}
			p.stop(t, syscall.SIGTERM)
			return
		case <-tick.C:
			_, _ = c.Write([]byte(" "))
		case <-deadline:
			t.Fatal("the trickling connection is still open")
		}
	}
}
