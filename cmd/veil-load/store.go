package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/host"
)

// storeOptions drive the in-process scale run: agents are created through
// the agent actors (keys derived in the software enclave, the same atomic
// write as POST /agent/create, no chain steps) straight into a bbolt file,
// then activated in bulk to measure activation latency and memory per
// active agent actor.
type storeOptions struct {
	data        string
	n           int
	concurrency int
	active      []int
	samples     int
	// reuse takes the agents already in the data file (up to n) instead
	// of creating n.
	reuse bool
	// prefix names the created agents (prefix-0, prefix-1, …): names are
	// unique per account, so adding agents to a data file needs a new one
	// (-prefix defaults to one from the clock).
	prefix string
	// heapProfiles, when set, is where a heap profile is written before
	// and after each activation count (issue 38 item 4: the per-actor
	// cost by allocation site, not a heap delta), with summary.txt: the
	// per-agent figures and sites veil-load computes from the same
	// samples itself (no go tool pprof needed).
	heapProfiles string
}

func parseInts(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if v, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && v > 0 {
			out = append(out, v)
		}
	}
	return out
}

func runStore(ctx context.Context, o storeOptions, w io.Writer) error {
	if err := os.MkdirAll(o.data, 0o700); err != nil {
		return err
	}
	path := filepath.Join(o.data, "veil.db")
	st, err := persistence.OpenBolt(path, persistence.BoltOptions{})
	if err != nil {
		return err
	}
	defer st.Close()
	var root [32]byte
	root[0] = 1
	prov, err := software.New(root)
	if err != nil {
		return err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	defer system.Shutdown()
	// Snapshots on, as veild runs a single node: each active agent's
	// published snapshot is part of what it costs.
	host := host.NewHost(system, agent.Loader(agent.Deps{Store: st, Log: quiet, Keys: agent.EnclaveKeys(prov), Chains: agent.NoChains{}, Snapshots: agent.NewSnapshots()}),
		host.HostConfig{PassivateAfter: time.Hour, Shards: 64}, quiet, nil)
	defer host.Stop(context.Background())

	var ids []string
	if o.reuse {
		ids, err = storedAgents(ctx, st, o.n)
		fmt.Fprintf(w, "reusing %d agents of %s\n", len(ids), path)
	} else {
		ids, err = storeCreate(ctx, host, o, w)
	}
	if err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "data file %s: %.1f MiB, %d bytes per agent\n", path, float64(fi.Size())/(1<<20), fi.Size()/int64(max(1, len(ids))))

	// Activation latency: every request activates a passivated agent.
	passivateAll(host)
	lat := make([]time.Duration, 0, o.samples)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < o.samples && i < len(ids); i++ {
		id := ids[r.IntN(len(ids))]
		t0 := time.Now()
		if _, err := host.Request(ctx, id, &agent.Get{AccountID: loadAccount}); err != nil {
			return err
		}
		lat = append(lat, time.Since(t0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		fmt.Fprintf(w, "activation from the store (%d samples, one at a time): p50 %v  p99 %v  max %v\n",
			len(lat), lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
	}

	recBytes, err := recordBytes(ctx, st, ids)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "an agent record decoded in memory: %d bytes\n", recBytes)
	for _, k := range o.active {
		if k > len(ids) {
			k = len(ids)
		}
		passivateAll(host)
		// Writes the log holds in memory until bbolt has them (the
		// store's pending overlay) are not an actor's: measure with none.
		if err := st.WaitApplied(); err != nil {
			return err
		}
		before := heap()
		rssBefore := rss()
		var sitesBefore heapSites
		if o.heapProfiles != "" {
			sitesBefore = readHeapSites()
		}
		if err := writeHeapProfile(o.heapProfiles, fmt.Sprintf("heap-%d-before.pb.gz", k)); err != nil {
			return err
		}
		if err := activate(ctx, host, ids[:k], o.concurrency); err != nil {
			return err
		}
		if err := st.WaitApplied(); err != nil {
			return err
		}
		after := heap()
		rssAfter := rss()
		if err := writeHeapProfile(o.heapProfiles, fmt.Sprintf("heap-%d-after.pb.gz", k)); err != nil {
			return err
		}
		per := (after - before) / uint64(k)
		fmt.Fprintf(w, "%d active agents: heap +%.1f MiB = %d bytes per active agent actor (%d beyond its record); RSS +%.1f MiB\n",
			host.Active(), float64(after-before)/(1<<20), per, int64(per)-int64(recBytes), float64(rssAfter-rssBefore)/(1<<20))
		if o.heapProfiles != "" {
			sitesAfter := readHeapSites()
			var sum strings.Builder
			writeHeapSummary(&sum, k, sitesBefore, sitesAfter, 25)
			fmt.Fprint(w, sum.String())
			if err := appendFile(filepath.Join(o.heapProfiles, "summary.txt"), sum.String()); err != nil {
				return err
			}
		}
	}
	return nil
}

const loadAccount = "load-account"

func storeCreate(ctx context.Context, host *host.Host, o storeOptions, w io.Writer) ([]string, error) {
	fmt.Fprintf(w, "creating %d agents in %s with %d workers\n", o.n, o.data, o.concurrency)
	return createN(ctx, w, o.n, o.concurrency, func(_, i int) (string, error) {
		id := uuid.NewString()
		_, err := host.Request(ctx, id, &agent.Create{
			AccountID: loadAccount, Name: fmt.Sprintf("%s-%d", o.prefix, i), Chain: "ethereum",
			Chains: []chains.ID{chains.Ethereum}, OwnerWallet: "0x" + strings.Repeat("ab", 20), OwnerScheme: "evm",
		})
		return id, err
	})
}

func activate(ctx context.Context, host *host.Host, ids []string, workers int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(next.Add(1)) - 1
				if j >= len(ids) {
					return
				}
				if _, err := host.Request(ctx, ids[j], &agent.Get{AccountID: loadAccount}); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return err
	}
	return nil
}

func passivateAll(host *host.Host) {
	for host.Active() > 0 {
		host.Shed()
		time.Sleep(10 * time.Millisecond)
	}
}

func heap() uint64 {
	goruntime.GC()
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// rss is the resident set size from /proc (0 where unavailable).
func rss() int64 {
	goruntime.GC()
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// recordBytes measures the heap an agent record takes once decoded, the
// part of an active agent that is its state rather than the actor.
func recordBytes(ctx context.Context, st persistence.Store, ids []string) (uint64, error) {
	n := min(len(ids), 10000)
	if n == 0 {
		return 0, nil
	}
	raws := make([][]byte, n)
	for i := range raws {
		rec, err := st.Get(ctx, agent.TableAgents, ids[i])
		if err != nil {
			return 0, err
		}
		raws[i] = rec.Value
	}
	before := heap()
	keep := make([]*agent.Record, n)
	for i, raw := range raws {
		var r agent.Record
		if err := json.Unmarshal(raw, &r); err != nil {
			return 0, err
		}
		keep[i] = &r
	}
	after := heap()
	goruntime.KeepAlive(keep)
	return (after - before) / uint64(n), nil
}

// storedAgents lists up to n agent ids of the data file.
func storedAgents(ctx context.Context, st persistence.Store, n int) ([]string, error) {
	var ids []string
	q := persistence.Query{Limit: 10000}
	for len(ids) < n {
		recs, err := st.List(ctx, agent.TableAgents, q)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if len(ids) < n {
				ids = append(ids, r.Key)
			}
		}
		if len(recs) < q.Limit {
			break
		}
		q.After = recs[len(recs)-1].Key
	}
	return ids, nil
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeHeapProfile writes the heap profile as of a fresh GC into
// dir/name (nothing when dir is ""). Compare two with
//
//	go tool pprof -sample_index=inuse_space -diff_base before.pb.gz -top after.pb.gz
func writeHeapProfile(dir, name string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	goruntime.GC() // the profile is as of the last completed GC
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
