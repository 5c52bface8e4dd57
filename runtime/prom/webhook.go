package prom

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// webhookMetrics are the webhook deliverer's series (docs/webhooks.md).
type webhookMetrics struct {
	attempts *prometheus.CounterVec
	latency  prometheus.Histogram
	backlog  prometheus.Gauge
}

func (m *Metrics) registerWebhooks() {
	m.webhooks = webhookMetrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_webhook_deliveries_total", Help: "Webhook delivery attempts, by outcome: delivered, retry (failed, tried again later) or failed (given up after 24 h)."}, []string{"outcome"}),
		latency:  prometheus.NewHistogram(prometheus.HistogramOpts{Name: "veil_webhook_delivery_seconds", Help: "Time of one webhook delivery attempt, until the receiver's answer or the error.", Buckets: latencyBuckets}),
		backlog:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "veil_webhook_backlog", Help: "Webhook deliveries still pending after the deliverer's last pass."}),
	}
	m.reg.MustRegister(m.webhooks.attempts, m.webhooks.latency, m.webhooks.backlog)
}

// WebhookAttempt records one delivery attempt (actors/webhook.Metrics).
func (m *Metrics) WebhookAttempt(outcome string, took time.Duration) {
	m.webhooks.attempts.WithLabelValues(outcome).Inc()
	m.webhooks.latency.Observe(took.Seconds())
}

// WebhookBacklog records the deliveries still pending.
func (m *Metrics) WebhookBacklog(n int) { m.webhooks.backlog.Set(float64(n)) }
