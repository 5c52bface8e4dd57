package enclaveactor_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	enclaveactor "github.com/veilhq/veil/actors/enclave"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	secpstealth "github.com/veilhq/veil/chains/stealth/secp256k1"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/software"
)

const agent = "00000000-0000-0000-0000-0000000000aa"

func newProvider(t *testing.T) *software.Provider {
	t.Helper()
	var root [32]byte
	if _, err := rand.Read(root[:]); err != nil {
		t.Fatal(err)
	}
	p, err := software.New(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func newSystem(t *testing.T) *actor.ActorSystem {
	t.Helper()
	s := actor.NewActorSystem()
	t.Cleanup(s.Shutdown)
	return s
}

func timeoutCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestGroupEndToEnd(t *testing.T) {
	p := newProvider(t)
	g := enclaveactor.NewGroup(newSystem(t), p)
	defer g.Stop(context.Background())
	ctx := timeoutCtx(t)
	if len(g.Chains()) != 6 {
		t.Fatalf("group serves %v", g.Chains())
	}
	for _, c := range chains.Order() {
		ref := g.Ref(c)
		if ref == nil || ref.Chain() != c {
			t.Fatalf("no actor for %s", c)
		}
		direct, err := p.DeriveKeys(ctx, agent, c, 0)
		if err != nil {
			t.Fatal(err)
		}
		viaRef, err := ref.DeriveKeys(ctx, agent, c, 0)
		if err != nil {
			t.Fatal(err)
		}
		viaGroup, err := g.DeriveKeys(ctx, agent, c, 0)
		if err != nil {
			t.Fatal(err)
		}
		if viaRef.Address != direct.Address || viaGroup.MetaAddress != direct.MetaAddress {
			t.Fatalf("%s: actor keys differ from the provider's", c)
		}
		ex, err := ref.Export(ctx, agent, c, 0)
		if err != nil || len(ex) != 66 {
			t.Fatalf("%s: export: %v", c, err)
		}
		sk, err := g.ScanKeys(ctx, agent, c, 0)
		if err != nil || string(sk.SpendingPublicKey) != string(direct.SpendingPublicKey) {
			t.Fatalf("%s: scan keys: %v", c, err)
		}

		// Account and stealth signatures through the chains.Signer of
		// the actor.
		var signer chains.Signer = ref
		key := chains.KeyRef{AgentID: agent, Chain: c}
		if c.Family() == chains.FamilyEVM {
			digest := crypto.Keccak256([]byte("tx"))
			sig, err := signer.Sign(ctx, spendReq(key, digest))
			if err != nil {
				t.Fatal(err)
			}
			pub, err := crypto.SigToPub(digest, sig)
			if err != nil || crypto.PubkeyToAddress(*pub).Hex() != direct.Address {
				t.Fatalf("%s: account signature does not recover the address", c)
			}
			meta, _ := secpstealth.ParseMetaAddress(direct.MetaAddress)
			ann, err := secpstealth.Generate(meta, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			key.EphemeralPub = ann.EphemeralPub[:]
			sig, err = g.Sign(ctx, spendReq(key, digest))
			if err != nil {
				t.Fatal(err)
			}
			pub, err = crypto.SigToPub(digest, sig)
			if err != nil || crypto.PubkeyToAddress(*pub) != common.Address(ann.StealthAddress) {
				t.Fatalf("%s: stealth signature does not recover the one-time address", c)
			}
			continue
		}
		msg := []byte("tx")
		sig, err := signer.Sign(ctx, spendReq(key, msg))
		if err != nil || !ed25519.Verify(direct.AccountPublicKey, msg, sig) {
			t.Fatalf("%s: account signature: %v", c, err)
		}
		meta, _ := edstealth.ParseMetaAddress(direct.MetaAddress)
		ann, err := edstealth.Generate(meta, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		key.EphemeralPub = ann.EphemeralPub[:]
		sig, err = g.Sign(ctx, spendReq(key, msg))
		if err != nil || !ed25519.Verify(ann.OneTimePub[:], msg, sig) {
			t.Fatalf("%s: stealth signature: %v", c, err)
		}
	}

	info, err := g.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	att, err := g.Ref(chains.Solana).Attest(ctx, agent, chains.Order(), []byte("nonce-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := enclave.VerifySoftwareAttestation(info, att); err != nil {
		t.Fatal(err)
	}
	if att, err = g.Attest(ctx, agent, []chains.ID{chains.Base}, []byte("nonce-2")); err != nil {
		t.Fatal(err)
	}
	if err := enclave.VerifySoftwareAttestation(info, att); err != nil {
		t.Fatal(err)
	}

	// Provider errors pass through unchanged.
	if _, err := g.DeriveKeys(ctx, "bad/id", chains.Base, 0); !errors.Is(err, enclave.ErrInvalidInput) {
		t.Fatalf("bad agent id: %v", err)
	}
	if _, err := g.Sign(ctx, spendReq(chains.KeyRef{AgentID: agent, Chain: chains.Base}, []byte("short"))); !errors.Is(err, enclave.ErrInvalidInput) {
		t.Fatalf("short digest: %v", err)
	}
	if _, err := g.DeriveKeys(ctx, agent, "all", 0); !errors.Is(err, chains.ErrUnknownChain) {
		t.Fatalf("chain all: %v", err)
	}
}

func TestRefRefusesOtherChains(t *testing.T) {
	ref := enclaveactor.New(newSystem(t), chains.Base, newProvider(t))
	ctx := timeoutCtx(t)
	if _, err := ref.Sign(ctx, spendReq(chains.KeyRef{AgentID: agent, Chain: chains.Ethereum}, make([]byte, 32))); !errors.Is(err, enclaveactor.ErrWrongChain) {
		t.Fatalf("Sign for another chain: %v", err)
	}
	if _, err := ref.DeriveKeys(ctx, agent, chains.Polygon, 0); !errors.Is(err, enclaveactor.ErrWrongChain) {
		t.Fatalf("DeriveKeys for another chain: %v", err)
	}
	if _, err := ref.Export(ctx, agent, chains.Stellar, 0); !errors.Is(err, enclaveactor.ErrWrongChain) {
		t.Fatalf("Export for another chain: %v", err)
	}
	if _, err := ref.ScanKeys(ctx, agent, "", 0); !errors.Is(err, enclaveactor.ErrWrongChain) {
		t.Fatalf("ScanKeys without a chain: %v", err)
	}
	g := enclaveactor.NewGroup(newSystem(t), newProvider(t), chains.Stellar, chains.Stellar)
	if len(g.Chains()) != 1 {
		t.Fatalf("duplicates not ignored: %v", g.Chains())
	}
	if _, err := g.DeriveKeys(ctx, agent, chains.Base, 0); !errors.Is(err, enclaveactor.ErrWrongChain) {
		t.Fatalf("group without base: %v", err)
	}
}

func TestConcurrentRequests(t *testing.T) {
	p := newProvider(t)
	g := enclaveactor.NewGroup(newSystem(t), p)
	ctx := timeoutCtx(t)
	want := map[chains.ID]string{}
	for _, c := range chains.Order() {
		k, _ := p.DeriveKeys(ctx, agent, c, 0)
		want[c] = k.Address
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, c := range chains.Order() {
				k, err := g.DeriveKeys(ctx, agent, c, 0)
				if err != nil || k.Address != want[c] {
					t.Errorf("%s: %v", c, err)
				}
				if _, err := g.Sign(ctx, spendReq(chains.KeyRef{AgentID: agent, Chain: c}, make([]byte, 32))); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}

// stuck is a provider whose DeriveKeys blocks until release is closed, and
// whose Export panics.
type stuck struct {
	enclave.Provider
	release chan struct{}
}

func (s *stuck) DeriveKeys(ctx context.Context, agentID string, chain chains.ID, epoch uint32) (enclave.PublicKeys, error) {
	<-s.release
	return enclave.PublicKeys{Address: "late"}, nil
}

func (s *stuck) Export(context.Context, string, chains.ID, uint32) (string, error) {
	panic("0xsecret")
}

func TestDeadlinesAndFailures(t *testing.T) {
	s := &stuck{Provider: newProvider(t), release: make(chan struct{})}
	ref := enclaveactor.New(newSystem(t), chains.Base, s)
	released := false
	release := func() {
		if !released {
			close(s.release)
			released = true
		}
	}
	defer release()

	// The deadline bounds the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	start := time.Now()
	_, err := ref.DeriveKeys(ctx, agent, chains.Base, 0)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stuck provider: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("waited %v past a 200ms deadline", d)
	}

	// Cancellation without a deadline returns at once.
	ctx, cancel = context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	start = time.Now()
	if _, err := ref.Info(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled request: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cancellation took %v", d)
	}

	// An expired context is refused before sending.
	if _, err := ref.Info(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("request with a done context: %v", err)
	}

	// Unblock: the queued Info (whose caller left) is answered without
	// work, and the actor serves again.
	release()
	ok := timeoutCtx(t)
	if info, err := ref.Info(ok); err != nil || info.Provider != "software" {
		t.Fatalf("after release: %+v, %v", info, err)
	}

	// A panicking provider yields ErrInternal, without the panic value,
	// and the actor keeps serving.
	_, err = ref.Export(ok, agent, chains.Base, 0)
	if !errors.Is(err, enclaveactor.ErrInternal) {
		t.Fatalf("panicking provider: %v", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Fatalf("error %q carries the panic value", err)
	}
	if _, err := ref.Sign(ok, spendReq(chains.KeyRef{AgentID: agent, Chain: chains.Base}, make([]byte, 32))); err != nil {
		t.Fatalf("after a panic: %v", err)
	}

	// A stopped actor answers ErrStopped.
	if err := ref.Stop(ok); err != nil {
		t.Fatal(err)
	}
	if _, err := ref.Info(ok); !errors.Is(err, enclaveactor.ErrStopped) {
		t.Fatalf("stopped actor: %v", err)
	}
}

// spendReq labels a raw test signature as a spend of the key's own agent
// (the enclave signs nothing unlabelled).
func spendReq(key chains.KeyRef, payload []byte) chains.SignRequest {
	return chains.SpendRequest(key, payload, chains.Spend{Key: "test", AgentID: key.AgentID, Chain: key.Chain,
		Asset: "ETH", Amount: chains.NewAmount(big.NewInt(1), 18), Recipient: "test"})
}
