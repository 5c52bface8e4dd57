package relayer

import (
	"context"
	"math/big"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scrapeTimeout bounds the balance reads of one scrape.
const scrapeTimeout = 3 * time.Second

var (
	descBalance = prometheus.NewDesc("veil_relayer_balance", "The relayer's balance of the chain's native asset, in whole units (unset while it cannot be read).", []string{"chain", "asset"}, nil)
	descRunway  = prometheus.NewDesc("veil_relayer_runway_relays", "How many relays the relayer's balance pays at the mean cost of its recent relays (unset before its first relay since the start).", []string{"chain"}, nil)
	descSpent   = prometheus.NewDesc("veil_relayer_spent_total", "What the relayer paid for one-time addresses since the start (gas, fees, reserves), in whole units of the native asset.", []string{"chain", "asset"}, nil)
	descRelays  = prometheus.NewDesc("veil_relayer_relays_total", "Relays paid by the relayer since the start.", []string{"chain"}, nil)
	descLow     = prometheus.NewDesc("veil_relayer_low", "1 when the relayer needs funding: under --relayer-min-balance or --relayer-min-runway, or its balance cannot be read.", []string{"chain"}, nil)
)

// Collector exports the relayers' series (docs/metrics.md); register it
// on the process's registry.
func (s *Set) Collector() prometheus.Collector { return collector{s} }

type collector struct{ s *Set }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBalance, descRunway, descSpent, descRelays, descLow} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	for _, id := range c.s.Chains() {
		a := c.s.accounts[id]
		st := a.status(ctx)
		chain, asset := string(id), st.Asset
		if st.Balance != nil {
			ch <- prometheus.MustNewConstMetric(descBalance, prometheus.GaugeValue, whole(st.Balance, a.decimals), chain, asset)
		}
		if st.Runway >= 0 {
			ch <- prometheus.MustNewConstMetric(descRunway, prometheus.GaugeValue, float64(st.Runway), chain)
		}
		ch <- prometheus.MustNewConstMetric(descSpent, prometheus.CounterValue, whole(st.Spent, a.decimals), chain, asset)
		ch <- prometheus.MustNewConstMetric(descRelays, prometheus.CounterValue, float64(st.Relays), chain)
		low := 0.0
		if a.low(st, c.s.cfg.MinRunway) != "" {
			low = 1
		}
		ch <- prometheus.MustNewConstMetric(descLow, prometheus.GaugeValue, low, chain)
	}
}

// whole converts base units to whole units (a float: for a gauge only).
func whole(v *big.Int, decimals int) float64 {
	f, _ := new(big.Rat).SetFrac(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals)), nil)).Float64()
	return f
}
