//go:build !nodevnet

package solana_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/stealth/edstealth"
)

// BenchmarkSendStealth: stealth payments per second on the devnet, each a
// full SendStealth (enclave signature, intent written before and after,
// sendTransaction and a confirmation poll, the devnet ledger commit with its own fsync). serial: one sender;
// parallel-8: eight senders at once.
func BenchmarkSendStealth(b *testing.B) {
	for _, senders := range []int{1, 8} {
		name := "serial"
		if senders > 1 {
			name = fmt.Sprintf("parallel-%d", senders)
		}
		b.Run(name, func(b *testing.B) {
			e := newEnv(b)
			bob := e.agent("00000000-0000-0000-0000-0000000000bb", false)
			from := make([]agent, senders)
			for i := range from {
				from[i] = e.agent(fmt.Sprintf("00000000-0000-0000-0000-%012d", i+1), true)
			}
			var n atomic.Int64
			b.ResetTimer()
			start := time.Now()
			done := make(chan error, senders)
			for i := range senders {
				go func() {
					for {
						k := n.Add(1)
						if k > int64(b.N) {
							done <- nil
							return
						}
						a := from[i]
						if _, err := e.conn.SendStealth(bg, a.ref, a.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "SOL"), Amount: amt("0.001"), To: bob.keys.MetaAddress, IdempotencyKey: fmt.Sprintf("bench-%d", k)}); err != nil {
							done <- err
							return
						}
					}
				}()
			}
			for range senders {
				if err := <-done; err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "sends/s")
		})
	}
}

// BenchmarkScan: announcements read per second by Scan (getSignaturesForAddress
// of the announcement account, then getTransaction of each) on a devnet
// holding 1,000 announcements.
func BenchmarkScan(b *testing.B) {
	e := newEnv(b)
	bob := e.agent("00000000-0000-0000-0000-0000000000bb", false)
	const total = 1000
	senders := make([]agent, 4)
	for i := range senders {
		senders[i] = e.agent(fmt.Sprintf("00000000-0000-0000-0000-%012d", i+1), true)
	}
	done := make(chan error, len(senders))
	for i, a := range senders {
		go func() {
			for k := i; k < total; k += len(senders) {
				if _, err := e.conn.SendStealth(bg, a.ref, a.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "SOL"), Amount: amt("0.001"), To: bob.keys.MetaAddress, IdempotencyKey: fmt.Sprintf("fill-%d", k)}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range senders {
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	sk, err := e.enc.ScanKeys(bg, bob.id, chains.Solana, 0)
	if err != nil {
		b.Fatal(err)
	}
	var spend [32]byte
	copy(spend[:], sk.SpendingPublicKey)
	for _, check := range []bool{false, true} {
		name := "rpc"
		if check {
			name = "rpc+check"
		}
		b.Run(name, func(b *testing.B) {
			start := time.Now()
			for range b.N {
				anns, _, err := e.conn.Scan(bg, "", total)
				if err != nil || len(anns) != total {
					b.Fatalf("scan: %d, %v", len(anns), err)
				}
				if !check {
					continue
				}
				for _, an := range anns {
					pub, _ := edstealth.ParseSolanaAddress(an.StealthAddress)
					d, err := edstealth.DecodeAnnouncement(pub[:], append([]byte{an.ViewTag}, an.EphemeralPubKey...))
					if err != nil {
						b.Fatal(err)
					}
					if ok, _ := edstealth.Check(sk.ViewingPrivateKey, spend, d); !ok {
						b.Fatal("a payment to bob was not found")
					}
				}
			}
			b.ReportMetric(float64(total*b.N)/time.Since(start).Seconds(), "anns/s")
		})
	}
}
