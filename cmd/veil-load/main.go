// Command veil-load drives a running veild through the Go client: it
// creates agents (real owner signatures), then runs a mix of reads and
// chats at a chosen concurrency, printing a progress line every second and
// throughput, latency percentiles and errors at the end.
//
//	veil-load -url http://127.0.0.1:8080 -key veil_live_… -agents 1000 -concurrency 64 -duration 30s -chat 0.2
//
// Against a cluster, -url takes every member's URL, comma-separated; the
// requests (creates and the mixed load alike) go to them round-robin:
//
//	veil-load -url http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083 -key … -chat 1
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	goruntime "runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/client"
)

type options struct {
	url, key    string
	agents      int
	create      int
	concurrency int
	duration    time.Duration
	chatRatio   float64
	chain       string
	prefix      string
	message     string
}

func main() {
	var o options
	flag.StringVar(&o.url, "url", envOr("VEIL_URL", "http://127.0.0.1:8080"), "veild base URL (VEIL_URL); comma-separated URLs of cluster members spread the requests over them round-robin")
	flag.StringVar(&o.key, "key", os.Getenv("VEIL_API_KEY"), "API key (VEIL_API_KEY)")
	flag.IntVar(&o.agents, "agents", 1000, "distinct agents the load spreads over")
	flag.IntVar(&o.create, "create", -1, "agents to create first (default: -agents); 0 reuses the account's existing agents (store mode: the -data file's, up to -agents)")
	flag.IntVar(&o.concurrency, "concurrency", 64, "concurrent clients")
	flag.DurationVar(&o.duration, "duration", 30*time.Second, "how long the mixed load runs (0: only create)")
	flag.Float64Var(&o.chatRatio, "chat", 0.2, "fraction of requests that are chats (the rest are GET /agent/:id)")
	flag.StringVar(&o.chain, "chain", "ethereum", "chain of created agents")
	flag.StringVar(&o.prefix, "prefix", fmt.Sprintf("load-%d", time.Now().Unix()%100000), "name prefix of created agents")
	flag.StringVar(&o.message, "message", "hello", "chat message")
	mode := flag.String("mode", "api", "api: drive a running veild over HTTP; store: in-process scale run into -data (creation rate, file size, activation latency, memory per active agent)")
	var so storeOptions
	flag.StringVar(&so.data, "data", "./load-data", "store mode: data directory (a fresh one measures creation)")
	active := flag.String("active", "10000,100000", "store mode: active-agent counts to measure memory at")
	flag.IntVar(&so.samples, "samples", 10000, "store mode: activation latency samples")
	flag.StringVar(&so.heapProfiles, "heapprofile", "", "store mode: write heap profiles (inuse_space by site) before and after each -active count into this directory, and print (and append to DIR/summary.txt) the heap per active agent, its record's part and the rest by site, computed from the same samples in process; the files compare with go tool pprof -diff_base")
	flag.Parse()
	if *mode == "store" {
		so.n, so.concurrency, so.active, so.reuse, so.prefix = o.agents, o.concurrency, parseInts(*active), o.create == 0, o.prefix
		if so.heapProfiles != "" {
			// Fine sampling, set before the agents exist, so that the
			// per-actor sites (a few hundred bytes each) are resolved.
			goruntime.MemProfileRate = 4096
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		if err := runStore(ctx, so, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "veil-load:", err)
			os.Exit(1)
		}
		return
	}
	if o.create < 0 {
		o.create = o.agents
	}
	if o.key == "" {
		fmt.Fprintln(os.Stderr, "veil-load: -key (or VEIL_API_KEY) is required: the bootstrap key veild printed, or one from `veild apikey create`")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "veil-load:", err)
		os.Exit(1)
	}
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

// stats collects latencies and errors of one phase.
type stats struct {
	mu     sync.Mutex
	lat    []time.Duration
	errs   map[string]int
	done   atomic.Int64
	failed atomic.Int64
}

func newStats() *stats { return &stats{errs: map[string]int{}} }

func (s *stats) record(d time.Duration, err error) {
	s.done.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lat = append(s.lat, d)
	if err != nil {
		s.failed.Add(1)
		msg := err.Error()
		var ce *client.Error
		if errors.As(err, &ce) {
			msg = fmt.Sprintf("%d %s", ce.StatusCode, ce.Message)
		}
		if len(msg) > 120 {
			msg = msg[:120]
		}
		s.errs[msg]++
	}
}

func (s *stats) report(w io.Writer, name string, elapsed time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.lat)
	if n == 0 {
		fmt.Fprintf(w, "%s: no requests\n", name)
		return
	}
	sort.Slice(s.lat, func(i, j int) bool { return s.lat[i] < s.lat[j] })
	q := func(p float64) time.Duration { return s.lat[min(n-1, int(float64(n)*p))] }
	fmt.Fprintf(w, "%-8s %8d requests in %6.1fs  %9.1f req/s  p50 %-9v p90 %-9v p99 %-9v max %-9v errors %d\n",
		name, n, elapsed.Seconds(), float64(n)/elapsed.Seconds(), q(0.50).Round(10*time.Microsecond),
		q(0.90).Round(10*time.Microsecond), q(0.99).Round(10*time.Microsecond), s.lat[n-1].Round(10*time.Microsecond), s.failed.Load())
	for msg, c := range s.errs {
		fmt.Fprintf(w, "         %6d × %s\n", c, msg)
	}
}

// progress prints one line a second until stop is closed.
func progress(w io.Writer, what string, total int, s *stats, stop <-chan struct{}) {
	start := time.Now()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last := int64(0)
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			d := s.done.Load()
			of := ""
			if total > 0 {
				of = fmt.Sprintf("/%d", total)
			}
			fmt.Fprintf(w, "  %s: %d%s done, %d/s now, %d errors, %s elapsed\n", what, d, of, d-last, s.failed.Load(), time.Since(start).Round(time.Second))
			last = d
		}
	}
}

// members is one client per URL of -url; next picks them round-robin.
type members struct {
	cs []*client.Client
	n  atomic.Uint64
}

func (m *members) next() *client.Client {
	if len(m.cs) == 1 {
		return m.cs[0]
	}
	return m.cs[(m.n.Add(1)-1)%uint64(len(m.cs))]
}

// splitURLs parses -url: one URL or several, comma-separated.
func splitURLs(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

func run(ctx context.Context, o options, w io.Writer) error {
	urls := splitURLs(o.url)
	if len(urls) == 0 {
		return errors.New("-url is empty")
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.concurrency, MaxConnsPerHost: o.concurrency}, Timeout: 2 * time.Minute}
	c := &members{}
	for _, u := range urls {
		mc, err := client.New(u, o.key, client.WithHTTPClient(hc), client.WithRetry(client.RetryPolicy{}))
		if err != nil {
			return err
		}
		if _, err := mc.Health(ctx); err != nil {
			return fmt.Errorf("veild at %s is not answering /health: %w (is it running?)", u, err)
		}
		c.cs = append(c.cs, mc)
	}
	if len(urls) > 1 {
		fmt.Fprintf(w, "spreading requests round-robin over %d members\n", len(urls))
	}
	var ids []string
	var err error
	if o.create > 0 {
		ids, err = createAgents(ctx, c, o, w)
		if err != nil {
			return err
		}
	}
	if len(ids) < o.agents {
		existing, err := c.next().ListAgents(ctx)
		if err != nil {
			return err
		}
		for _, a := range existing {
			if len(ids) >= o.agents {
				break
			}
			ids = append(ids, a.ID)
		}
	}
	if o.duration <= 0 || len(ids) == 0 {
		return nil
	}
	return mixed(ctx, c, o, ids, w)
}

func createAgents(ctx context.Context, c *members, o options, w io.Writer) ([]string, error) {
	fmt.Fprintf(w, "creating %d agents on %s with %d clients\n", o.create, o.chain, o.concurrency)
	signers := make([]client.Signer, o.concurrency)
	for i := range signers {
		owner, _ := crypto.GenerateKey()
		signers[i] = client.NewEVMSigner(owner)
	}
	return createN(ctx, w, o.create, o.concurrency, func(worker, i int) (string, error) {
		a, err := c.next().CreateAgentSigned(ctx, fmt.Sprintf("%s-%d", o.prefix, i), o.chain, signers[worker])
		if err != nil {
			return "", err
		}
		return a.ID, nil
	})
}

// createN creates agents 0 to n-1 with `workers` workers (worker w calls
// create(w, i) for each next index i), showing progress, then the
// latency report. It returns the ids of the agents created, in order.
func createN(ctx context.Context, w io.Writer, n, workers int, create func(worker, i int) (string, error)) ([]string, error) {
	s := newStats()
	stop := make(chan struct{})
	go progress(w, "create", n, s, stop)
	ids := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for wi := 0; wi < workers; wi++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				id, err := create(wi, i)
				s.record(time.Since(t0), err)
				if err == nil {
					ids[i] = id
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	s.report(w, "create", time.Since(start))
	out := ids[:0]
	for _, id := range ids {
		if id != "" {
			out = append(out, id)
		}
	}
	return out, ctx.Err()
}

func mixed(ctx context.Context, c *members, o options, ids []string, w io.Writer) error {
	fmt.Fprintf(w, "mixed load on %d agents for %v: %.0f%% chat, %d clients\n", len(ids), o.duration, o.chatRatio*100, o.concurrency)
	reads, chats, all := newStats(), newStats(), newStats()
	stop := make(chan struct{})
	go progress(w, "mixed", 0, all, stop)
	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for wi := 0; wi < o.concurrency; wi++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
			for ctx.Err() == nil {
				id := ids[r.IntN(len(ids))]
				t0 := time.Now()
				var err error
				chat := r.Float64() < o.chatRatio
				if chat {
					_, err = c.next().Chat(ctx, id, client.ChatRequest{Message: o.message})
				} else {
					_, err = c.next().GetAgent(ctx, id)
				}
				if ctx.Err() != nil {
					return // the run ended mid-request: not an error of the server
				}
				d := time.Since(t0)
				all.record(d, err)
				if chat {
					chats.record(d, err)
				} else {
					reads.record(d, err)
				}
			}
		}(uint64(wi) + 1)
	}
	wg.Wait()
	close(stop)
	elapsed := time.Since(start)
	reads.report(w, "read", elapsed)
	chats.report(w, "chat", elapsed)
	all.report(w, "total", elapsed)
	if all.failed.Load() > 0 {
		return fmt.Errorf("%d requests failed", all.failed.Load())
	}
	return nil
}
