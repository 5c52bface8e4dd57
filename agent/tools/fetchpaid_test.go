package tools

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm/eip3009"
	"github.com/veilhq/veil/chains/evm/x402"
)

const x402Token = "0x00000000000000000000000000000000000000C0"

// fakeAuthorizer is the agent's account on base, with base's USDC at
// x402Token: it signs for real, so the test server can verify.
type fakeAuthorizer struct{ key *ecdsa.PrivateKey }

func (f *fakeAuthorizer) domain(chainID *big.Int, contract string) (chains.ID, chains.TransferAuthorization, error) {
	if chainID.Cmp(big.NewInt(84532)) != 0 || !strings.EqualFold(contract, x402Token) {
		return "", chains.TransferAuthorization{}, fmt.Errorf("%w: no such token", chains.ErrNoAuthorizations)
	}
	return chains.Base, chains.TransferAuthorization{Name: "USD Coin", Version: "2", ChainID: big.NewInt(84532), Contract: x402Token, Asset: "USDC"}, nil
}

func (f *fakeAuthorizer) sign(a chains.TransferAuthorization) (chains.TransferAuthorization, []byte, error) {
	a.From = crypto.PubkeyToAddress(f.key.PublicKey).Hex()
	sig, err := eip3009.SignWithKey(a, f.key)
	return a, sig, err
}

// x402Server is a resource that costs amount base units of USDC on base
// (Go's x402.Verify checks what it gets); refuse makes it answer 402 to
// every payment.
type x402Server struct {
	amount        string
	refuse        bool
	body          string
	hits, payment atomic.Int32
	free          bool
	now           func() time.Time
}

func (s *x402Server) req() x402.Requirements {
	return x402.Requirements{Scheme: "exact", Network: "eip155:84532", Amount: s.amount, Asset: x402Token,
		PayTo: "0x00000000000000000000000000000000000000B0", MaxTimeoutSeconds: 60, Extra: &x402.Extra{Name: "USD Coin", Version: "2"}}
}

func (s *x402Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.hits.Add(1)
	if s.free {
		_, _ = w.Write([]byte(s.body))
		return
	}
	req := s.req()
	pr := x402.PaymentRequired{X402Version: 2, Resource: x402.Resource{URL: r.URL.String()}, Accepts: []x402.Requirements{req}}
	h := r.Header.Get(x402.HeaderSignature)
	if h != "" && !s.refuse {
		s.payment.Add(1)
		var p x402.Payload
		err := x402.Decode(h, &p)
		if err == nil {
			_, _, err = x402.Verify(p, req, s.now())
		}
		if err == nil {
			enc, _ := x402.Encode(x402.SettleResponse{Success: true, Transaction: "0x" + strings.Repeat("ab", 32), Network: req.Network, Payer: p.Payload.Authorization.From})
			w.Header().Set(x402.HeaderResponse, enc)
			_, _ = w.Write([]byte(s.body))
			return
		}
		pr.Error = err.Error()
	}
	if r.URL.Path == "/broken" {
		w.Header().Set(x402.HeaderRequired, "%%%")
	} else {
		enc, _ := x402.Encode(pr)
		w.Header().Set(x402.HeaderRequired, enc)
	}
	w.WriteHeader(http.StatusPaymentRequired)
	_, _ = w.Write([]byte("{}"))
}

func TestFetchPaid(t *testing.T) {
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		server    *x402Server
		path      string
		say       string // the user's message; %s is the URL
		maxAmount string
		asset     string
		wantErr   error
		wantText  string
		signs     int
		paid      bool
	}{
		{name: "free resource", server: &x402Server{free: true, body: `{"temp":21}`}, say: "fetch %s paying up to 1 USDC", maxAmount: "1"},
		{name: "within the maximum", server: &x402Server{amount: "500000", body: `{"temp":21}`}, say: "fetch %s paying up to 1 USDC", maxAmount: "1", signs: 1, paid: true},
		{name: "exactly the maximum", server: &x402Server{amount: "1000000", body: "ok"}, say: "fetch %s paying up to 1 USDC", maxAmount: "1", signs: 1, paid: true},
		{name: "above the maximum", server: &x402Server{amount: "1000001"}, say: "fetch %s paying up to 1 USDC", maxAmount: "1", wantErr: ErrOverMaximum, wantText: "more than the maximum"},
		{name: "maximum in another asset", server: &x402Server{amount: "1"}, say: "fetch %s paying up to 1 ETH", maxAmount: "1", asset: "ETH", wantErr: ErrOverMaximum, wantText: "the maximum is in ETH"},
		{name: "malformed PAYMENT-REQUIRED", server: &x402Server{amount: "1"}, path: "/broken", say: "fetch %s paying up to 1 USDC", maxAmount: "1", wantText: "without a readable x402"},
		{name: "server refuses the payment", server: &x402Server{amount: "1", refuse: true}, say: "fetch %s paying up to 1 USDC", maxAmount: "1", signs: 1, wantText: "refused the payment"},
		{name: "amount not stated", server: &x402Server{amount: "1"}, say: "fetch %s", maxAmount: "1", wantErr: ErrNotConfirmed},
		{name: "a question", server: &x402Server{amount: "1"}, say: "should I fetch %s paying up to 1 USDC?", maxAmount: "1", wantErr: ErrNotConfirmed},
		{name: "URL not stated", server: &x402Server{amount: "1"}, say: "fetch the weather paying up to 1 USDC", maxAmount: "1", wantErr: ErrNotConfirmed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.chain.x402 = &fakeAuthorizer{key: key}
			tc.server.now = f.env.Now
			srv := httptest.NewServer(tc.server)
			defer srv.Close()
			f.env.HTTP = srv.Client()
			u := srv.URL + "/weather"
			if tc.path != "" {
				u = srv.URL + tc.path
			}
			say := tc.say
			if strings.Contains(say, "%s") {
				say = fmt.Sprintf(say, u)
			}
			asset := ""
			if tc.asset != "" {
				asset = fmt.Sprintf(`,"asset":%q`, tc.asset)
			}
			out, err := f.run(t, "fetch_paid", say, fmt.Sprintf(`{"url":%q,"max_amount":%q%s}`, u, tc.maxAmount, asset))
			signs := 0
			for _, c := range f.chain.calls {
				if c.Op == "sign_authorization" {
					signs++
					if c.Key != "x402/key-1" || c.Asset != "USDC" || c.To != "0x00000000000000000000000000000000000000B0" {
						t.Errorf("signed %+v", c)
					}
				}
			}
			if signs != tc.signs {
				t.Fatalf("%d authorizations signed, want %d (err %v)", signs, tc.signs, err)
			}
			if tc.wantErr != nil || tc.wantText != "" {
				if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) || !strings.Contains(err.Error(), tc.wantText) {
					t.Fatalf("err = %v, want %v %q", err, tc.wantErr, tc.wantText)
				}
				if errors.Is(err, ErrNotConfirmed) && tc.server.hits.Load() != 0 {
					t.Fatalf("the gate let %d requests through", tc.server.hits.Load())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res := out.(*FetchResult)
			if res.Status != 200 || res.Paid != tc.paid || res.Body != tc.server.body || res.Notice == "" {
				t.Fatalf("result %+v", res)
			}
			if tc.paid && (res.Settlement == nil || !res.Settlement.Success || res.Asset != "USDC" || res.Chain != chains.Base) {
				t.Fatalf("paid result %+v", res)
			}
			if tc.paid && len(f.note.notes) != 1 {
				t.Fatalf("notifications %v, want one payment_sent", f.note.notes)
			}
		})
	}
}

func TestFetchPaidCapsTheBody(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(&x402Server{free: true, body: strings.Repeat("x", MaxFetchBody+100)})
	defer srv.Close()
	f.env.HTTP = srv.Client()
	out, err := f.run(t, "fetch_paid", "fetch "+srv.URL+" paying up to 1 USDC", fmt.Sprintf(`{"url":%q,"max_amount":"1"}`, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	if res := out.(*FetchResult); len(res.Body) != MaxFetchBody || !res.Truncated {
		t.Fatalf("body of %d bytes, truncated %v", len(res.Body), res.Truncated)
	}
	for _, bad := range []string{"file:///etc/passwd", "ftp://x.test/a", "http://user:pw@x.test/"} {
		if _, err := f.run(t, "fetch_paid", "fetch "+bad+" paying up to 1 USDC", fmt.Sprintf(`{"url":%q,"max_amount":"1"}`, bad)); !errors.Is(err, ErrInvalidArgs) {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
}

// TestWebClientRefusesPrivateAddresses: without AllowPrivate the default
// client dials no loopback or private address.
func TestWebClientRefusesPrivateAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	if _, err := NewWebClient(WebOptions{}).Get(srv.URL); !errors.Is(err, ErrPrivateAddress) {
		t.Fatalf("loopback: err = %v", err)
	}
	resp, err := NewWebClient(WebOptions{AllowPrivate: true}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}
