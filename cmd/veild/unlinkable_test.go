//go:build !nodevnet

package main

import (
	"context"
	"crypto/rand"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	solanago "github.com/gagliardetto/solana-go"
	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/devnet"
	"github.com/veilhq/veil/chains/devnet/solanadev"
	"github.com/veilhq/veil/chains/devnet/stellardev"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/relayer"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	"github.com/veilhq/veil/chains/stealth/secp256k1"
	"github.com/veilhq/veil/chains/stellar"
	"github.com/veilhq/veil/chains/stellar/stellartest"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/software"
)

// oneTime is a one-time address of an agent and who may touch it on
// chain: its payers, the relayer and its withdrawals' destinations.
type oneTime struct {
	agent, address string
	ref            chains.KeyRef
	allowed        map[string]bool
}

// graph is the value graph read back from a devnet: for every address,
// the addresses it shared a value-moving transaction with (sender,
// recipient of value, token transfer ends, fee payer, accounts created
// or closed for it).
type graph map[string]map[string]bool

func (g graph) link(parties []string) {
	for _, a := range parties {
		for _, b := range parties {
			if a == b {
				continue
			}
			if g[a] == nil {
				g[a] = map[string]bool{}
			}
			g[a][b] = true
		}
	}
}

// check asserts the rule of docs/stealth.md ("Privacy") for every
// one-time address: no edge to its agent's main account, and no
// counterparty but its payers, the relayer and its destinations.
func (g graph) check(t *testing.T, chain chains.ID, mains map[string]string, otas []*oneTime) {
	t.Helper()
	for _, o := range otas {
		peers := g[o.address]
		if len(peers) == 0 {
			t.Errorf("%s: one-time address %s has no transaction in the graph (the scenario did not run?)", chain, o.address)
		}
		var got []string
		for p := range peers {
			got = append(got, p)
			if p == mains[o.agent] {
				t.Errorf("%s: one-time address %s of %s is linked on chain to its agent's main account %s", chain, o.address, o.agent, p)
			} else if !o.allowed[p] {
				t.Errorf("%s: one-time address %s of %s has a counterparty %s that is neither a payer, the relayer nor a destination", chain, o.address, o.agent, p)
			}
		}
		sort.Strings(got)
		t.Logf("%s: %s (%s) ↔ %v", chain, o.address, o.agent, got)
	}
}

// TestUnlinkableGraph (issue 35 item 5): a scenario on the EVM, Solana and
// Stellar devnets with relayers — invoices paid by a wallet and by an
// agent, x402 both ways, withdrawals of tokens and of the native asset;
// on Stellar every invoice account activated by the relayer as its sponsor
// (CAP-33) and withdrawn with the relayer as the transaction's source —
// then the graph of every transaction, read back from the devnets' blocks
// (Stellar: Horizon's transactions), has no edge between a one-time
// address and its agent's main account; its only counterparties are its
// payers, the relayer and its destinations. Controls show the links the
// graphs would catch: an EVM withdrawal through a connector without a
// relayer, a Stellar invoice account paid by its own agent.
func TestUnlinkableGraph(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	d, err := devnet.StartEVM(ctx, devnet.EVMOptions{Chains: []chains.ID{chains.Base}, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	sdev, err := solanadev.Start(ctx, solanadev.Options{Dir: t.TempDir(), Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sdev.Close() })
	xdev, err := stellardev.Start(ctx, stellardev.Options{Dir: t.TempDir(), Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = xdev.Close() })
	store := openTestBolt(t)
	var root [32]byte
	_, _ = rand.Read(root[:])
	prov, err := software.New(root)
	if err != nil {
		t.Fatal(err)
	}
	relayers, err := relayer.New(ctx, prov, relayer.Config{Chains: []chains.ID{chains.Base, chains.Solana, chains.Stellar}})
	if err != nil {
		t.Fatal(err)
	}
	signer := enclave.WithPolicy(prov, relayers.Authorizer(policy.NewStore(store, time.Now)))
	cfg, _ := d.Config(chains.Base)
	econn, err := evm.New(ctx, cfg, evm.Options{Store: store, Signer: signer, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer econn.Close()
	sconn, err := solana.New(ctx, sdev.Config(), solana.Options{Store: store, Signer: signer, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	xconn, err := stellar.New(ctx, xdev.Config(), stellar.Options{Store: store, Signer: signer, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	econn.UseRelayer(relayers.Relayer(chains.Base))
	sconn.UseRelayer(relayers.Relayer(chains.Solana))
	xconn.UseRelayer(relayers.Relayer(chains.Stellar))
	erel, srel, xrel := relayers.Relayer(chains.Base).Address, relayers.Relayer(chains.Solana).Address, relayers.Relayer(chains.Stellar).Address
	if _, err := xconn.Fund(ctx, xrel); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Net(chains.Base).Fund(ctx, common.HexToAddress(erel)); err != nil {
		t.Fatal(err)
	}
	if _, err := sconn.Fund(ctx, srel); err != nil {
		t.Fatal(err)
	}

	// Two agents and a wallet, each with a funded main account per chain.
	keys := map[chains.ID]map[string]enclave.PublicKeys{chains.Base: {}, chains.Solana: {}, chains.Stellar: {}}
	mains := map[chains.ID]map[string]string{chains.Base: {}, chains.Solana: {}, chains.Stellar: {}}
	for _, id := range []string{"agent-a", "agent-b", "wallet"} {
		for _, chain := range []chains.ID{chains.Base, chains.Solana, chains.Stellar} {
			k, err := prov.DeriveKeys(ctx, id, chain, 0)
			if err != nil {
				t.Fatal(err)
			}
			keys[chain][id], mains[chain][id] = k, k.Address
		}
		if _, err := d.Net(chains.Base).Fund(ctx, common.HexToAddress(mains[chains.Base][id])); err != nil {
			t.Fatal(err)
		}
		if _, err := sconn.Fund(ctx, mains[chains.Solana][id]); err != nil {
			t.Fatal(err)
		}
		// Friendbot gives 10,000 XLM and leaves 10,000 USDC to claim
		// (the agents' withdrawals claim it as they pay).
		if _, err := xconn.Fund(ctx, mains[chains.Stellar][id]); err != nil {
			t.Fatal(err)
		}
	}
	// Stellar's wallet is a key of its own (a SEP-7 wallet signs its
	// plain payments itself), and the agents' destinations are accounts
	// that trust USDC.
	xwallet := keypair.MustRandom()
	xdest := map[string]*keypair.Full{"agent-a": keypair.MustRandom(), "agent-b": keypair.MustRandom()}
	for _, kp := range []*keypair.Full{xwallet, xdest["agent-a"], xdest["agent-b"]} {
		stellartest.TrustUSDC(ctx, t, xconn, kp)
	}
	mains[chains.Stellar]["wallet"] = xwallet.Address()
	main := func(chain chains.ID, id string) chains.KeyRef { return chains.KeyRef{AgentID: id, Chain: chain} }
	dest := map[chains.ID]map[string]string{
		chains.Base:    {"agent-a": common.HexToAddress("0xa1").Hex(), "agent-b": common.HexToAddress("0xb1").Hex()},
		chains.Solana:  {"agent-a": solanago.NewWallet().PublicKey().String(), "agent-b": solanago.NewWallet().PublicKey().String()},
		chains.Stellar: {"agent-a": xdest["agent-a"].Address(), "agent-b": xdest["agent-b"].Address()},
	}
	newOTA := func(chain chains.ID, agent string, payers ...string) *oneTime {
		t.Helper()
		o := &oneTime{agent: agent, allowed: map[string]bool{dest[chain][agent]: true}}
		if chain == chains.Base {
			o.allowed[erel] = true
			meta, err := secp256k1.ParseMetaAddress(keys[chain][agent].MetaAddress)
			if err != nil {
				t.Fatal(err)
			}
			ann, err := secp256k1.Generate(meta, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			o.address = common.Address(ann.StealthAddress).Hex()
			o.ref = chains.KeyRef{AgentID: agent, Chain: chain, EphemeralPub: ann.EphemeralPub[:]}
		} else if chain == chains.Stellar {
			o.allowed[xrel] = true
			meta, err := edstealth.ParseMetaAddressFor(edstealth.Stellar, keys[chain][agent].MetaAddress)
			if err != nil {
				t.Fatal(err)
			}
			ann, err := edstealth.Generate(meta, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			o.address = edstealth.Address(edstealth.Stellar, ann.OneTimePub)
			o.ref = chains.KeyRef{AgentID: agent, Chain: chain, EphemeralPub: ann.EphemeralPub[:]}
		} else {
			o.allowed[srel] = true
			meta, err := edstealth.ParseMetaAddress(keys[chain][agent].MetaAddress)
			if err != nil {
				t.Fatal(err)
			}
			ann, err := edstealth.Generate(meta, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			o.address = solanago.PublicKeyFromBytes(ann.OneTimePub[:]).String()
			o.ref = chains.KeyRef{AgentID: agent, Chain: chain, EphemeralPub: ann.EphemeralPub[:]}
		}
		for _, p := range payers {
			o.allowed[mains[chain][p]] = true
		}
		return o
	}
	usdc := func(s string) chains.Amount { return amt(s) }
	pay := func(conn chains.Connector, chain chains.ID, from string, to *oneTime, asset, amount, key string) {
		t.Helper()
		r, err := conn.Withdraw(ctx, main(chain, from), chains.WithdrawRequest{From: mains[chain][from], To: to.address, Asset: chainstest.Asset(conn, asset), Amount: usdc(amount), IdempotencyKey: key})
		if err != nil {
			t.Fatalf("%s pays %s %s: %v", from, amount, asset, err)
		}
		if chain == chains.Base {
			if rc, err := econn.WaitMined(ctx, r.TxHash); err != nil || rc.Status != 1 {
				t.Fatalf("payment %v %v", rc, err)
			}
		}
	}

	// EVM: A's invoices paid by the wallet and by agent B (plain
	// transfers to the invoice address, as a wallet or pay_invoice does),
	// x402 both ways (settled by the relayer), then every withdrawal.
	eByWallet := newOTA(chains.Base, "agent-a", "wallet")
	eByAgent := newOTA(chains.Base, "agent-a", "agent-b")
	eX402In := newOTA(chains.Base, "agent-a", "agent-b")
	eX402Out := newOTA(chains.Base, "agent-b", "agent-a")
	pay(econn, chains.Base, "wallet", eByWallet, "USDC", "3", "e-wallet")
	pay(econn, chains.Base, "agent-b", eByAgent, "USDC", "2", "e-agent")
	x402(ctx, t, econn, main(chains.Base, "agent-b"), mains[chains.Base]["agent-b"], main(chains.Base, "agent-a"), mains[chains.Base]["agent-a"], eX402In.address, "x-in")
	x402(ctx, t, econn, main(chains.Base, "agent-a"), mains[chains.Base]["agent-a"], main(chains.Base, "agent-b"), mains[chains.Base]["agent-b"], eX402Out.address, "x-out")
	for i, w := range []struct {
		o   *oneTime
		all bool
	}{{eByWallet, true}, {eByAgent, false}, {eX402In, true}, {eX402Out, true}} {
		req := chains.WithdrawRequest{From: w.o.address, To: dest[chains.Base][w.o.agent], Asset: chainstest.Asset(econn, "USDC"), All: w.all, IdempotencyKey: "e-w" + string(rune('0'+i))}
		if !w.all {
			req.Amount = usdc("1.5")
		}
		// The agent's tools name its main account as the gas payer; the
		// relayer pays instead.
		r, err := econn.WithdrawWithGas(ctx, w.o.ref, req, chains.GasPayer{Key: main(chains.Base, w.o.agent), Address: mains[chains.Base][w.o.agent]})
		if err != nil {
			t.Fatalf("withdraw from %s: %v", w.o.address, err)
		}
		if rc, err := econn.WaitMined(ctx, r.TxHash); err != nil || rc.Status != 1 {
			t.Fatalf("withdrawal %v %v", rc, err)
		}
	}
	// The fee rule: the relayer's 0.05 USDC came out of each withdrawal.
	if b, err := econn.Balance(ctx, dest[chains.Base]["agent-a"]); err != nil || b.Tokens["USDC"] != "5.35" {
		t.Fatalf("A's destination holds %+v (%v), want 3 + 1.5 + 1 less three 0.05 fees = 5.35 USDC", b, err)
	}

	// Solana: a USDC-only invoice address (paid by the wallet) withdraws
	// with the relayer as fee payer; agent B pays USDC and SOL.
	sByWallet := newOTA(chains.Solana, "agent-a", "wallet")
	sByAgent := newOTA(chains.Solana, "agent-a", "agent-b")
	sSOL := newOTA(chains.Solana, "agent-a", "agent-b")
	pay(sconn, chains.Solana, "wallet", sByWallet, "USDC", "2", "s-wallet")
	pay(sconn, chains.Solana, "agent-b", sByAgent, "USDC", "4", "s-agent")
	pay(sconn, chains.Solana, "agent-b", sSOL, "SOL", "0.5", "s-sol")
	if b, _ := sconn.Balance(ctx, sByWallet.address); b.Native != "0" {
		t.Fatalf("the wallet-paid invoice address holds %s SOL, want none (USDC only)", b.Native)
	}
	for i, w := range []struct {
		o      *oneTime
		asset  string
		amount string
	}{{sByWallet, "USDC", ""}, {sByAgent, "USDC", "1"}, {sSOL, "SOL", ""}} {
		req := chains.WithdrawRequest{From: w.o.address, To: dest[chains.Solana][w.o.agent], Asset: chainstest.Asset(sconn, w.asset), All: w.amount == "", IdempotencyKey: "s-w" + string(rune('0'+i))}
		if w.amount != "" {
			req.Amount = usdc(w.amount)
		}
		if _, err := sconn.Withdraw(ctx, w.o.ref, req); err != nil {
			t.Fatalf("withdraw %s from %s: %v", w.asset, w.o.address, err)
		}
	}
	if b, err := sconn.Balance(ctx, dest[chains.Solana]["agent-a"]); err != nil || b.Tokens["USDC"] != "2.98" {
		t.Fatalf("A's Solana destination holds %+v (%v), want 2 + 1 less two 0.01 fees = 2.98 USDC", b, err)
	}

	// Stellar: each invoice's one-time account is activated by the relayer
	// as sponsor (CAP-33: it exists with 0 XLM and trusts USDC, its
	// reserves the relayer's) before it is shown; the wallet pays a USDC
	// invoice by a plain payment, agent B a USDC and an XLM invoice; the
	// withdrawals have the relayer as the transaction's source (fee payer)
	// and pay its fee in USDC.
	xByWallet := newOTA(chains.Stellar, "agent-a", "wallet")
	xByAgent := newOTA(chains.Stellar, "agent-a", "agent-b")
	xXLM := newOTA(chains.Stellar, "agent-a", "agent-b")
	for i, inv := range []struct {
		o     *oneTime
		asset string
	}{{xByWallet, "USDC"}, {xByAgent, "USDC"}, {xXLM, "XLM"}} {
		if _, err := xconn.PrepareDestination(ctx, inv.o.ref, inv.o.address, inv.asset, "x-act"+string(rune('0'+i))); err != nil {
			t.Fatalf("activate %s for %s: %v", inv.o.address, inv.asset, err)
		}
	}
	stellartest.Pay(t, xconn.Client(), xconn.Config().NetworkPassphrase, xwallet, xByWallet.address, "2", stellartest.USDC(xconn))
	pay(xconn, chains.Stellar, "agent-b", xByAgent, "USDC", "4", "x-agent")
	pay(xconn, chains.Stellar, "agent-b", xXLM, "XLM", "5", "x-xlm")
	if b, _ := xconn.Balance(ctx, xByWallet.address); b.Native != "0" || b.Tokens["USDC"] != "2" {
		t.Fatalf("the wallet-paid Stellar invoice account holds %+v, want 2 USDC and no XLM (its reserves are the relayer's)", b)
	}
	for i, w := range []struct {
		o      *oneTime
		asset  string
		amount string
	}{{xByWallet, "USDC", ""}, {xByAgent, "USDC", "1"}, {xXLM, "XLM", ""}} {
		req := chains.WithdrawRequest{From: w.o.address, To: dest[chains.Stellar][w.o.agent], Asset: chainstest.Asset(xconn, w.asset), All: w.amount == "", IdempotencyKey: "x-w" + string(rune('0'+i))}
		if w.amount != "" {
			req.Amount = usdc(w.amount)
		}
		if _, err := xconn.Withdraw(ctx, w.o.ref, req); err != nil {
			t.Fatalf("withdraw %s from %s: %v", w.asset, w.o.address, err)
		}
	}
	if b, err := xconn.Balance(ctx, dest[chains.Stellar]["agent-a"]); err != nil || b.Tokens["USDC"] != "10002.98" {
		t.Fatalf("A's Stellar destination holds %+v (%v), want friendbot's 10,000 + 2 + 1 less two 0.01 fees = 10002.98 USDC", b, err)
	}
	// A Stellar control: an invoice account its own agent pays is linked,
	// and the Stellar graph must see that.
	xCtrl := newOTA(chains.Stellar, "agent-a")
	if _, err := xconn.PrepareDestination(ctx, xCtrl.ref, xCtrl.address, "XLM", "x-act-ctrl"); err != nil {
		t.Fatal(err)
	}
	pay(xconn, chains.Stellar, "agent-a", xCtrl, "XLM", "1", "x-ctrl")

	// A control: the same withdrawal through a connector without a
	// relayer is funded by the agent's main account, and the graph sees it.
	ctrl := newOTA(chains.Base, "agent-a", "wallet")
	pay(econn, chains.Base, "wallet", ctrl, "USDC", "1", "e-ctrl")
	plain, err := evm.New(ctx, cfg, evm.Options{Store: openTestBolt(t), Signer: signer, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	r, err := plain.WithdrawWithGas(ctx, ctrl.ref, chains.WithdrawRequest{From: ctrl.address, To: dest[chains.Base]["agent-a"], Asset: chainstest.Asset(plain, "USDC"), All: true, IdempotencyKey: "ctrl"},
		chains.GasPayer{Key: main(chains.Base, "agent-a"), Address: mains[chains.Base]["agent-a"]})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.WaitMined(ctx, r.TxHash); err != nil {
		t.Fatal(err)
	}

	eg := evmGraph(ctx, t, cfg.RPCURL)
	eg.check(t, chains.Base, mains[chains.Base], []*oneTime{eByWallet, eByAgent, eX402In, eX402Out})
	if !eg[ctrl.address][mains[chains.Base]["agent-a"]] {
		t.Errorf("control: the graph does not show the main account funding %s without a relayer: it could not catch a link", ctrl.address)
	}
	sg := solanaGraph(ctx, t, sdev.URL(), []string{mains[chains.Solana]["agent-a"], mains[chains.Solana]["agent-b"], mains[chains.Solana]["wallet"], srel,
		dest[chains.Solana]["agent-a"], dest[chains.Solana]["agent-b"], sByWallet.address, sByAgent.address, sSOL.address})
	sg.check(t, chains.Solana, mains[chains.Solana], []*oneTime{sByWallet, sByAgent, sSOL})
	xg := stellarGraph(t, xconn.Client(), []string{mains[chains.Stellar]["agent-a"], mains[chains.Stellar]["agent-b"], xwallet.Address(), xrel,
		dest[chains.Stellar]["agent-a"], dest[chains.Stellar]["agent-b"], xByWallet.address, xByAgent.address, xXLM.address, xCtrl.address})
	xg.check(t, chains.Stellar, mains[chains.Stellar], []*oneTime{xByWallet, xByAgent, xXLM})
	if !xg[xCtrl.address][mains[chains.Stellar]["agent-a"]] {
		t.Errorf("Stellar control: the graph does not show agent A's main account paying its own invoice account %s: it could not catch a link", xCtrl.address)
	}
}
