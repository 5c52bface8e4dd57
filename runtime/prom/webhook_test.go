package prom_test

import (
	"testing"
	"time"

	"github.com/veilhq/veil/actors/webhook"
	"github.com/veilhq/veil/runtime/prom"
)

var _ webhook.Metrics = (*prom.Metrics)(nil)

func TestWebhookSeries(t *testing.T) {
	m := prom.New(0)
	m.WebhookAttempt(webhook.OutcomeRetry, 20*time.Millisecond)
	m.WebhookAttempt(webhook.OutcomeRetry, 20*time.Millisecond)
	m.WebhookAttempt(webhook.OutcomeDelivered, 5*time.Millisecond)
	m.WebhookBacklog(3)
	fams := scrape(t, m)
	byOutcome := map[string]float64{}
	for _, mm := range fams["veil_webhook_deliveries_total"].GetMetric() {
		byOutcome[mm.GetLabel()[0].GetValue()] = mm.GetCounter().GetValue()
	}
	if byOutcome["retry"] != 2 || byOutcome["delivered"] != 1 || len(byOutcome) != 2 {
		t.Fatalf("deliveries by outcome = %v", byOutcome)
	}
	if n := fams["veil_webhook_delivery_seconds"].GetMetric()[0].GetHistogram().GetSampleCount(); n != 3 {
		t.Fatalf("latency samples = %d", n)
	}
	if b := fams["veil_webhook_backlog"].GetMetric()[0].GetGauge().GetValue(); b != 3 {
		t.Fatalf("backlog = %v", b)
	}
}
