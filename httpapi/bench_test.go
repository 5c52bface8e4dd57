package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Figures in docs/BENCHMARKS.md ("Agent identity API"):
//
//	go test -run '^$' -bench 'Agent' -benchtime 3000x ./httpapi/
const clients = 64

// load runs n requests over `clients` concurrent clients and reports
// requests/s and latency percentiles. do(i) performs request i and returns
// its status.
func load(b *testing.B, n int, want int, do func(c *http.Client, i int) int) {
	b.Helper()
	b.ResetTimer()
	rps, lat := drive(b, n, want, do)
	b.StopTimer()
	b.ReportMetric(rps, "req/s")
	b.ReportMetric(float64(lat[n/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[n*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// drive is the closed-loop loader: n requests over `clients` concurrent
// clients, each with its own keep-alive connection, each sending its next
// request as soon as the last is answered (driveAtRate with no rate).
func drive(b *testing.B, n int, want int, do func(c *http.Client, i int) int) (float64, []time.Duration) {
	return driveAtRate(b, n, 0, want, do)
}

// driveAtRate is the open-loop loader: request i is due at start + i/rate
// whatever the server's speed, sent by the first of `clients` workers free
// at that moment, and its latency counts from when it was due (so a
// request that waited for a free worker is charged the wait: no
// coordinated omission). With rate 0 a request is due when a worker takes
// it (closed loop). It returns the achieved requests/s and the sorted
// latencies, and fails the benchmark if any request got another status.
func driveAtRate(b *testing.B, n int, rate float64, want int, do func(c *http.Client, i int) int) (float64, []time.Duration) {
	b.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var bad atomic.Int64
	var wg sync.WaitGroup
	var interval time.Duration
	if rate > 0 {
		interval = time.Duration(float64(time.Second) / rate)
	}
	start := time.Now()
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				due := time.Now()
				if interval > 0 {
					due = start.Add(time.Duration(i) * interval)
					time.Sleep(time.Until(due))
				}
				if do(c, i) != want {
					bad.Add(1)
				}
				lat[i] = time.Since(due)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if bad.Load() > 0 {
		b.Fatalf("%d of %d requests failed", bad.Load(), n)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return float64(n) / elapsed.Seconds(), lat
}

func get(c *http.Client, url, key string) int {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func BenchmarkAgentCreate(b *testing.B) {
	e := newEnv(b, envOptions{})
	n := b.N
	bodies := make([][]byte, n)
	o := newEVMOwner(b)
	for i := range bodies {
		bodies[i], _ = json.Marshal(o.createBody(fmt.Sprintf("bench-%d-%d", n, i), "ethereum"))
	}
	load(b, n, 201, func(c *http.Client, i int) int {
		req, _ := http.NewRequest("POST", e.url+"/agent/create", bytes.NewReader(bodies[i]))
		req.Header.Set("Authorization", "Bearer "+e.key)
		resp, err := c.Do(req)
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	})
}

// agentsFor creates count agents to read.
func agentsFor(b testing.TB, e *env, count int) []string {
	o := newEVMOwner(b)
	ids := make([]string, count)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			r := e.do("POST", "/agent/create", e.key, o.createBody(fmt.Sprintf("read-%d", i), "ethereum"))
			var out struct{ ID string }
			_ = json.Unmarshal(r.body, &out)
			ids[i] = out.ID
		}(i)
	}
	wg.Wait()
	return ids
}

func BenchmarkAgentGetWarm(b *testing.B) {
	e := newEnv(b, envOptions{})
	ids := agentsFor(b, e, 256)
	for _, id := range ids { // activate every agent
		get(http.DefaultClient, e.url+"/agent/"+id, e.key)
	}
	load(b, b.N, 200, func(c *http.Client, i int) int {
		return get(c, e.url+"/agent/"+ids[i%len(ids)], e.key)
	})
}

// BenchmarkAgentGetCold reads agents whose actors are passivated: every
// request activates one from the store.
func BenchmarkAgentGetCold(b *testing.B) {
	e := newEnv(b, envOptions{})
	ids := agentsFor(b, e, b.N)
	for _, id := range ids {
		e.host.Passivate(id)
	}
	for e.host.Active() > 0 {
		time.Sleep(time.Millisecond)
	}
	load(b, b.N, 200, func(c *http.Client, i int) int {
		return get(c, e.url+"/agent/"+ids[i], e.key)
	})
}

// BenchmarkChat drives chat with the builtin planner, 64 clients, the
// store on disk: a message that runs no tool and one that runs one
// (get_agent_info, so no chain is involved). Each client chats with its
// own agent: an agent handles one message at a time, by design.
// BenchmarkChatAtRate offers chats open-loop at a fixed rate (issue 21's
// target is p99 <= 20 ms at >= 2,000 chats/s) and reports the achieved
// chats/s and the latency percentiles counted from each chat's due time.
//
//	go test -run '^$' -bench 'ChatAtRate' -benchtime 20000x ./httpapi/
func BenchmarkChatAtRate(b *testing.B) {
	for _, rate := range []float64{1000, 2000, 3000, 4000} {
		b.Run(fmt.Sprintf("NoTool/%.0f", rate), func(b *testing.B) {
			e := newEnv(b, envOptions{})
			ids := agentsFor(b, e, clients)
			body, _ := json.Marshal(map[string]string{"message": "hello"})
			b.ReportAllocs()
			b.ResetTimer()
			rps, lat := driveAtRate(b, b.N, rate, 200, func(c *http.Client, i int) int {
				req, _ := http.NewRequest("POST", e.url+"/agent/"+ids[i%clients]+"/chat", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+e.key)
				resp, err := c.Do(req)
				if err != nil {
					return 0
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode
			})
			b.StopTimer()
			b.ReportMetric(rps, "req/s")
			b.ReportMetric(float64(lat[b.N/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[b.N*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// The store's side of every chat (issue 38) is reported per chat: the
// Apply calls, the committer's groups (batches/commit, commit-ms: with the
// write-ahead log that is one append and fdatasync; without it, the bbolt
// transaction) and its busy time per chat (commit-us/chat: the serial
// stage's cost), the pages bbolt wrote and their bytes (with the log, the
// applier's; the measured window ends once it has applied every chat), the
// applier's transactions (apply-tx/chat, groups/apply-tx, apply-tx-ms,
// apply-us/chat; with the log only), and what the log wrote (log-B/chat:
// its records; log-zero-B/chat: the zeroes it filled ahead for later
// segments; B-written/chat plus these is what the store handed the disk).
// /proc/self/io's write_bytes is not used: it counts a dirtied page cache
// folio whole, so on kernels with large folios a few KiB written into a
// zero-filled segment count as up to a MiB, which the disk never sees.
// VEIL_BENCH_APPLY_DELAY sets the log applier's delay (applyDelayEnv;
// 0: none). VEIL_BENCH_STORE_LOG=false runs it on the
// pre-log path (storeLogEnv), with the same names, for benchstat:
//
//	go test -c -o httpapi.test ./httpapi/
//	VEIL_BENCH_STORE_LOG=false ./httpapi.test -test.run '^$' -test.bench '^BenchmarkChat$' -test.benchtime 1500x -test.benchmem >nolog.txt
//	./httpapi.test -test.run '^$' -test.bench '^BenchmarkChat$' -test.benchtime 1500x -test.benchmem >log.txt
//	benchstat nolog.txt log.txt
func BenchmarkChat(b *testing.B) {
	for _, bc := range []struct{ name, msg string }{
		{"NoTool", "hello"},
		{"OneTool", "show my agent info"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var applies, commits, batches, commitNs atomic.Int64
			var applyTx, applyGroups, applyNs atomic.Int64
			e := newEnv(b, envOptions{applies: &applies, observe: func(n int, d time.Duration) {
				commits.Add(1)
				batches.Add(int64(n))
				commitNs.Add(int64(d))
			}, observeApply: func(g int, d time.Duration) {
				applyTx.Add(1)
				applyGroups.Add(int64(g))
				applyNs.Add(int64(d))
			}})
			ids := agentsFor(b, e, clients)
			bodies := make([][]byte, clients)
			for i := range bodies {
				bodies[i], _ = json.Marshal(map[string]string{"message": bc.msg})
			}
			b.ReportAllocs()
			applied(b, e) // the agents' creation is not the chats'
			a0, c0, n0, t0 := applies.Load(), commits.Load(), batches.Load(), commitNs.Load()
			x0, g0, at0 := applyTx.Load(), applyGroups.Load(), applyNs.Load()
			w0 := e.bolt.WriteStats()
			cpu0, cpuOK := processCPU()
			defer func() {
				applied(b, e) // the applier's work for these chats is theirs
				per := func(v int64) float64 { return float64(v) / float64(b.N) }
				if cpu1, ok := processCPU(); ok && cpuOK {
					// The whole process: server, applier and the load's clients.
					b.ReportMetric(per(int64(cpu1-cpu0))/1e3, "cpu-us/chat")
				}
				c := float64(max(1, commits.Load()-c0))
				w := e.bolt.WriteStats()
				b.ReportMetric(per(w.Pages-w0.Pages), "pages/chat")
				b.ReportMetric(per(w.Bytes-w0.Bytes), "B-written/chat")
				b.ReportMetric(per(w.LogBytes-w0.LogBytes), "log-B/chat")
				b.ReportMetric(per(w.LogZeroBytes-w0.LogZeroBytes), "log-zero-B/chat")
				b.ReportMetric(per(applies.Load()-a0), "applies/chat")
				b.ReportMetric(float64(batches.Load()-n0)/c, "batches/commit")
				b.ReportMetric(float64(commitNs.Load()-t0)/c/1e6, "commit-ms")
				b.ReportMetric(per(commitNs.Load()-t0)/1e3, "commit-us/chat")
				if x := applyTx.Load() - x0; x > 0 {
					b.ReportMetric(per(x), "apply-tx/chat")
					b.ReportMetric(float64(applyGroups.Load()-g0)/float64(x), "groups/apply-tx")
					b.ReportMetric(float64(applyNs.Load()-at0)/float64(x)/1e6, "apply-tx-ms")
					b.ReportMetric(per(applyNs.Load()-at0)/1e3, "apply-us/chat")
				}
			}()
			load(b, b.N, 200, func(c *http.Client, i int) int {
				req, _ := http.NewRequest("POST", e.url+"/agent/"+ids[i%clients]+"/chat", bytes.NewReader(bodies[i%clients]))
				req.Header.Set("Authorization", "Bearer "+e.key)
				resp, err := c.Do(req)
				if err != nil {
					return 0
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode
			})
		})
	}
}

// applied returns once bbolt holds every write answered so far: the
// log's applier has caught up (without the log there is nothing to wait
// for).
func applied(b *testing.B, e *env) {
	b.Helper()
	if err := e.bolt.WaitApplied(); err != nil {
		b.Fatal(err)
	}
}
