//go:build !nodevnet

package evm_test

import (
	"context"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/evmtest"
	"github.com/veilhq/veil/chains/evm/x402"
	"github.com/veilhq/veil/chains/internal/settletest"
)

// authEnv is a Base connector for following x402 authorizations to their
// fate (TestAuthorizationFate, TestAuthorizationLogs): its clock is the
// test's (set), what it reports is recorded (settled), alice (the payer)
// and bob (the payee, who submits) are funded, and authorizations pay
// payTo. ctx ends with the test.
type authEnv struct {
	ctx        context.Context
	c          *evm.Connector
	settled    settletest.Recorder
	alice, bob *evmtest.Agent
	payTo      common.Address
	head       time.Time // the chain's head once alice and bob are funded

	mu    sync.Mutex
	clock time.Time
}

// newAuthEnv connects to cfg with agents named after name ("name-alice",
// "name-bob", "name-payee").
func newAuthEnv(t *testing.T, cfg evm.Config, name string) *authEnv {
	t.Helper()
	e := &authEnv{clock: time.Now(), alice: evmtest.NewAgent(name + "-alice"), bob: evmtest.NewAgent(name + "-bob")}
	e.c = connect(t, cfg, openStore(t, t.TempDir()), evmtest.NewSigner(e.alice, e.bob), func(o *evm.Options) { o.Now = e.now; o.OnSettled = e.settled.On })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	e.ctx = ctx
	for _, a := range []*evmtest.Agent{e.alice, e.bob} {
		mustMined(t, e.c, mustFund(t, e.c, a.Address).TxHash)
	}
	e.payTo = crypto.PubkeyToAddress(evmtest.NewAgent(name + "-payee").Account.PublicKey)
	head, err := e.c.Client().HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.head = time.Unix(int64(head.Time), 0)
	return e
}

// now is the connector's clock.
func (e *authEnv) now() time.Time { e.mu.Lock(); defer e.mu.Unlock(); return e.clock }

// set sets the connector's clock to at.
func (e *authEnv) set(at time.Time) { e.mu.Lock(); e.clock = at; e.mu.Unlock() }

// sign has alice authorize value USDC to payTo, valid before validBefore,
// with key's nonce (as fetch_paid signs under its payment's key).
func (e *authEnv) sign(t *testing.T, key, value string, validBefore time.Time) (chains.TransferAuthorization, []byte) {
	t.Helper()
	auth, err := e.c.AuthorizationDomain(e.ctx, "USDC")
	if err != nil {
		t.Fatal(err)
	}
	auth.From, auth.To = e.alice.Address.Hex(), e.payTo.Hex()
	auth.Value, auth.ValidAfter, auth.ValidBefore = units(t, value, 6), big.NewInt(0), big.NewInt(validBefore.Unix())
	auth.Nonce = x402.NonceFor(e.alice.ID, key)
	sig, err := e.c.SignAuthorization(e.ctx, e.alice.Ref(chains.Base), auth, key)
	if err != nil {
		t.Fatal(err)
	}
	return auth, sig
}

// settle submits auth as the payee (bob) would, without the payer hearing
// it; the transaction's hash.
func (e *authEnv) settle(t *testing.T, key string, auth chains.TransferAuthorization, sig []byte) string {
	t.Helper()
	r, err := e.c.SettleAuthorization(e.ctx, e.bob.Ref(chains.Base), e.bob.Address.Hex(), auth, sig, "settle/"+key)
	if err != nil {
		t.Fatalf("the payee's settlement: %v", err)
	}
	return r.TxHash
}
