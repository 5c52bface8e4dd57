package httpapi_test

import (
	"strings"
	"testing"
)

// TestWebhookRefusesEveryAddressClass: over real HTTP, a webhook URL that
// names an address of any class off the public internet, in any spelling,
// is a 400 in the error format at creation and nothing is stored (the
// dial-time half: actors/webhook's TestDeliveryRefusesEveryClassAtDialTime).
func TestWebhookRefusesEveryAddressClass(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, u := range []string{
		"http://[::1%25lo]:8080/x", "http://[::1%251]:8080/x", "http://[fe80::1%25lo]/x", "http://[fd00:ec2::254%25lo]/latest",
		"http://127.0.0.1/", "http://[::1]/", "http://10.0.0.1/", "http://172.16.0.1/", "http://192.168.0.1/",
		"http://169.254.169.254/latest/meta-data", "http://[fd00:ec2::254]/", "http://[fe80::1]/",
		"http://[::ffff:127.0.0.1]/", "http://[::7f00:1]/", "http://[64:ff9b::a9fe:a9fe]/", "http://[64:ff9b:1::1]/",
		"http://[2002:7f00:1::1]/", "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
		"http://0.0.0.0/", "http://[::]/", "http://255.255.255.255/", "http://224.0.0.1/", "http://[ff02::1]/",
		"http://100.64.0.1/", "http://198.18.0.1/", "http://192.0.2.1/", "http://198.51.100.1/", "http://203.0.113.1/",
		"http://[2001:db8::1]/", "http://2130706433/", "http://0177.0.0.1/", "http://0x7f.1/", "http://127.1/",
		"http://127.0.0.1./", "http://localhost./", "http://LOCALHOST/", "http://a.localhost/", "http://256.1.1.1/",
	} {
		r := e.do("POST", "/webhooks", e.key, map[string]any{"url": u})
		if r.status != 400 || !strings.Contains(string(r.body), "public") {
			t.Errorf("%s: %d %s, want 400", u, r.status, r.body)
			continue
		}
		r.errorBody(t)
	}
	if r := e.do("GET", "/webhooks", e.key, nil); r.status != 200 || strings.TrimSpace(string(r.body)) != "[]" {
		t.Fatalf("stored: %d %s", r.status, r.body)
	}
}
