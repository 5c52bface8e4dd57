package enclave_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	solanago "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/programs/token"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/enclave/txcheck"
)

const (
	alice = "00000000-0000-4000-8000-00000000000a"
	bob   = "00000000-0000-4000-8000-00000000000b"
	// passphrase of the Stellar test transactions.
	passphrase = "Veil enclave test network"
)

// recorder is an Authorizer that records what it was asked and refuses
// spends over a fixed amount.
type recorder struct {
	asked []chains.Spend
	max   *big.Int
}

func (r *recorder) Authorize(_ context.Context, s chains.Spend) error {
	r.asked = append(r.asked, s)
	if s.All || s.Amount.Units().Cmp(r.max) > 0 {
		return fmt.Errorf("%w: over %s", enclave.ErrPolicy, r.max)
	}
	return nil
}

func provider(t *testing.T) (enclave.Provider, *recorder) {
	t.Helper()
	var root [32]byte
	root[0] = 7
	p, err := software.New(root)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{max: big.NewInt(1000)}
	return enclave.WithPolicy(p, rec), rec
}

func spendOf(agent string, chain chains.ID, units int64) chains.Spend {
	return chains.Spend{Key: "pay-1", AgentID: agent, Chain: chain, Asset: chain.NativeAsset(),
		Amount: chains.NewAmount(big.NewInt(units), 18), Recipient: "st:eth:0x01"}
}

// evmTx returns the signing digest and unsigned encoding of a transaction.
func evmTx(t *testing.T, value int64, to *common.Address, data []byte) (digest, unsigned []byte) {
	t.Helper()
	tx := types.NewTx(&types.DynamicFeeTx{ChainID: big.NewInt(1337), Nonce: 3, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(2),
		Gas: 21000, To: to, Value: big.NewInt(value), Data: data})
	raw, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	h := types.LatestSignerForChainID(big.NewInt(1337)).Hash(tx)
	return h[:], raw
}

func call(sig string, args ...byte) []byte { return append(crypto.Keccak256([]byte(sig))[:4], args...) }

func stellarTx(t *testing.T, ops ...txnbuild.Operation) (hash, unsigned []byte) {
	t.Helper()
	kp := keypair.MustRandom()
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount: &txnbuild.SimpleAccount{AccountID: kp.Address(), Sequence: 1}, IncrementSequenceNum: true,
		Operations: ops, BaseFee: 100, Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewInfiniteTimeout()},
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := tx.Hash(passphrase)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return h[:], raw
}

func solanaMsg(t *testing.T, payer solanago.PublicKey, ixs ...solanago.Instruction) []byte {
	t.Helper()
	tx, err := solanago.NewTransaction(ixs, solanago.Hash{1}, solanago.TransactionPayer(payer))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := tx.Message.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// The enclave signs a transaction that moves value only with an explicit
// spend of the key's own agent, checked by the Authorizer; a no-value
// request is decoded and refused when it moves value or cannot be decoded.
func TestSignFailsClosed(t *testing.T) {
	ctx := context.Background()
	p, rec := provider(t)
	evmKey := chains.KeyRef{AgentID: alice, Chain: chains.Base}
	xlmKey := chains.KeyRef{AgentID: alice, Chain: chains.Stellar}
	solKey := chains.KeyRef{AgentID: alice, Chain: chains.Solana}
	solPub, err := p.DeriveKeys(ctx, alice, chains.Solana, 0)
	if err != nil {
		t.Fatal(err)
	}
	payer := solanago.PublicKeyFromBytes(solPub.AccountPublicKey)
	other := solanago.NewWallet().PublicKey()
	registry := common.HexToAddress("0x00000000000000000000000000000000000000aa")

	sendDigest, sendTx := evmTx(t, 5, &registry, nil)
	regDigest, regTx := evmTx(t, 0, &registry, call("register(string,bytes)", 1, 2, 3, 4))
	fillDigest, fillTx := evmTx(t, 0, &registry, nil)
	xferDigest, xferTx := evmTx(t, 0, &registry, call("transfer(address,uint256)", 0, 0))
	apprDigest, apprTx := evmTx(t, 0, &registry, call("approve(address,uint256)"))
	tfDigest, tfTx := evmTx(t, 0, &registry, call("transferFrom(address,address,uint256)"))
	snDigest, snTx := evmTx(t, 0, &registry, call("sendNative(address,bytes,bytes1)"))
	stDigest, stTx := evmTx(t, 0, &registry, call("sendToken(address,uint256,address,bytes,bytes1)"))
	createDigest, createTx := evmTx(t, 0, nil, []byte{0x60, 0x00})

	dest := keypair.MustRandom().Address()
	dataHash, dataTx := stellarTx(t, &txnbuild.ManageData{Name: "veil.name", Value: []byte("alice")},
		&txnbuild.Payment{Destination: dest, Amount: "0.0000001", Asset: txnbuild.NativeAsset{}})
	payHash, payTx := stellarTx(t, &txnbuild.Payment{Destination: dest, Amount: "1", Asset: txnbuild.NativeAsset{}})
	createAccHash, createAccTx := stellarTx(t, &txnbuild.CreateAccount{Destination: dest, Amount: "1"})
	mergeHash, mergeTx := stellarTx(t, &txnbuild.AccountMerge{Destination: dest})
	pathHash, pathTx := stellarTx(t, &txnbuild.PathPaymentStrictSend{SendAsset: txnbuild.NativeAsset{}, SendAmount: "1",
		Destination: dest, DestAsset: txnbuild.NativeAsset{}, DestMin: "1"})
	claimHash, claimTx := stellarTx(t, &txnbuild.CreateClaimableBalance{Amount: "1", Asset: txnbuild.NativeAsset{},
		Destinations: []txnbuild.Claimant{txnbuild.NewClaimant(dest, nil)}})

	memoMsg := solanaMsg(t, payer, solanago.NewInstruction(solanago.MemoProgramID,
		solanago.AccountMetaSlice{solanago.Meta(payer).SIGNER().WRITE()}, []byte("veil:name:1:alice")),
		system.NewTransferInstruction(0, payer, other).Build())
	lamportsMsg := solanaMsg(t, payer, system.NewTransferInstruction(1, payer, other).Build())
	createMsg := solanaMsg(t, payer, system.NewCreateAccountInstruction(1, 0, other, payer, other).Build())
	tokenMsg := solanaMsg(t, payer, token.NewTransferInstruction(1, other, other, payer, nil).Build())

	cases := []struct {
		name string
		req  chains.SignRequest
		// ok: signed; policy: refused by the Authorizer (ErrPolicy);
		// otherwise refused before any policy (ErrUnauthorized).
		ok, policy bool
	}{
		{"value without a spend or a label", chains.SignRequest{Key: evmKey, Payload: sendDigest}, false, false},
		{"both a spend and the no-value label", chains.SignRequest{Key: evmKey, Payload: sendDigest, Spend: ptr(spendOf(alice, chains.Base, 5)), NoValue: true}, false, false},
		{"spend of another agent", chains.SpendRequest(evmKey, sendDigest, spendOf(bob, chains.Base, 5)), false, false},
		{"spend on another chain", chains.SpendRequest(evmKey, sendDigest, spendOf(alice, chains.Ethereum, 5)), false, false},
		{"spend without an idempotency key", chains.SpendRequest(evmKey, sendDigest, func() chains.Spend { s := spendOf(alice, chains.Base, 5); s.Key = ""; return s }()), false, false},
		{"spend of zero", chains.SpendRequest(evmKey, sendDigest, spendOf(alice, chains.Base, 0)), false, false},
		{"spend within the policy", chains.SpendRequest(evmKey, sendDigest, spendOf(alice, chains.Base, 5)), true, false},
		{"spend over the policy", chains.SpendRequest(evmKey, sendDigest, spendOf(alice, chains.Base, 5000)), false, true},

		{"evm no-value: registration call", chains.NoValueRequest(evmKey, regDigest, regTx, ""), true, false},
		{"evm no-value: zero self-transfer (nonce filler)", chains.NoValueRequest(evmKey, fillDigest, fillTx, ""), true, false},
		{"evm no-value: but sends ether", chains.NoValueRequest(evmKey, sendDigest, sendTx, ""), false, false},
		{"evm no-value: but a token transfer", chains.NoValueRequest(evmKey, xferDigest, xferTx, ""), false, false},
		{"evm no-value: but an approval", chains.NoValueRequest(evmKey, apprDigest, apprTx, ""), false, false},
		{"evm no-value: but transferFrom", chains.NoValueRequest(evmKey, tfDigest, tfTx, ""), false, false},
		{"evm no-value: but StealthSender.sendNative", chains.NoValueRequest(evmKey, snDigest, snTx, ""), false, false},
		{"evm no-value: but StealthSender.sendToken", chains.NoValueRequest(evmKey, stDigest, stTx, ""), false, false},
		{"evm no-value: but a contract creation", chains.NoValueRequest(evmKey, createDigest, createTx, ""), false, false},
		{"evm no-value: digest of another transaction", chains.NoValueRequest(evmKey, sendDigest, regTx, ""), false, false},
		{"evm no-value: no transaction to decode", chains.NoValueRequest(evmKey, regDigest, nil, ""), false, false},
		{"evm no-value: garbage", chains.NoValueRequest(evmKey, regDigest, []byte{2, 0xc0, 1}, ""), false, false},

		{"stellar no-value: data and the 1-stroop marker", chains.NoValueRequest(xlmKey, dataHash, dataTx, passphrase), true, false},
		{"stellar no-value: but a payment", chains.NoValueRequest(xlmKey, payHash, payTx, passphrase), false, false},
		{"stellar no-value: but create account", chains.NoValueRequest(xlmKey, createAccHash, createAccTx, passphrase), false, false},
		{"stellar no-value: but account merge", chains.NoValueRequest(xlmKey, mergeHash, mergeTx, passphrase), false, false},
		{"stellar no-value: but a path payment", chains.NoValueRequest(xlmKey, pathHash, pathTx, passphrase), false, false},
		{"stellar no-value: but a claimable balance", chains.NoValueRequest(xlmKey, claimHash, claimTx, passphrase), false, false},
		{"stellar no-value: hash on another network", chains.NoValueRequest(xlmKey, dataHash, dataTx, "other network"), false, false},
		{"stellar no-value: no envelope", chains.NoValueRequest(xlmKey, dataHash, nil, passphrase), false, false},

		{"solana no-value: memo and a 0-lamport transfer", chains.NoValueRequest(solKey, memoMsg, nil, ""), true, false},
		{"solana no-value: but lamports", chains.NoValueRequest(solKey, lamportsMsg, nil, ""), false, false},
		{"solana no-value: but create account", chains.NoValueRequest(solKey, createMsg, nil, ""), false, false},
		{"solana no-value: but an SPL transfer", chains.NoValueRequest(solKey, tokenMsg, nil, ""), false, false},
		{"solana no-value: garbage", chains.NoValueRequest(solKey, []byte{9, 9, 9}, nil, ""), false, false},
		{"solana spend", chains.SpendRequest(solKey, lamportsMsg, spendOf(alice, chains.Solana, 1)), true, false},

		{"relayer fee with its spend", withFee(chains.SpendRequest(solKey, tokenMsg, spendOf(alice, chains.Solana, 5)), feeOf(alice, chains.Solana, 1)), true, false},
		{"relayer fee over the policy", withFee(chains.SpendRequest(solKey, tokenMsg, spendOf(alice, chains.Solana, 5)), feeOf(alice, chains.Solana, 5000)), false, true},
		{"relayer fee without a spend", chains.SignRequest{Key: solKey, Payload: tokenMsg, Fee: ptr(feeOf(alice, chains.Solana, 1))}, false, false},
		{"relayer fee of another agent", withFee(chains.SpendRequest(solKey, tokenMsg, spendOf(alice, chains.Solana, 5)), feeOf(bob, chains.Solana, 1)), false, false},
		{"relayer fee on another chain", withFee(chains.SpendRequest(solKey, tokenMsg, spendOf(alice, chains.Solana, 5)), feeOf(alice, chains.Base, 1)), false, false},
		{"relayer fee under the spend's key", withFee(chains.SpendRequest(solKey, tokenMsg, spendOf(alice, chains.Solana, 5)), func() chains.Spend {
			f := feeOf(alice, chains.Solana, 1)
			f.Key = spendOf(alice, chains.Solana, 5).Key
			return f
		}()), false, false},
		{"relayer fee of zero", withFee(chains.SpendRequest(solKey, tokenMsg, spendOf(alice, chains.Solana, 5)), feeOf(alice, chains.Solana, 0)), false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(rec.asked)
			sig, err := p.Sign(ctx, tc.req)
			switch {
			case tc.ok:
				if err != nil || len(sig) == 0 {
					t.Fatalf("refused: %v", err)
				}
			case tc.policy:
				if !errors.Is(err, enclave.ErrPolicy) {
					t.Fatalf("err = %v, want the policy's refusal", err)
				}
			default:
				if !errors.Is(err, enclave.ErrUnauthorized) || sig != nil {
					t.Fatalf("err = %v, want ErrUnauthorized", err)
				}
				if len(rec.asked) != before {
					t.Fatalf("a refused request reached the policy")
				}
			}
			if tc.req.NoValue && len(rec.asked) != before {
				t.Fatalf("a no-value request was counted as a spend")
			}
			want := before + 1
			if tc.req.Fee != nil {
				want++ // the fee is a spend the policy sees too
			}
			if tc.req.Spend != nil && tc.ok && len(rec.asked) != want {
				t.Fatalf("a spend was signed without the policy")
			}
			if tc.ok && tc.req.Key.Chain == chains.Solana && !ed25519.Verify(solPub.AccountPublicKey, tc.req.Payload, sig) {
				t.Fatalf("signature does not verify")
			}
			if !tc.ok && tc.req.NoValue && !errors.Is(err, txcheck.ErrMovesValue) && tc.req.Spend == nil {
				t.Fatalf("err = %v, want it to say the transaction moves value", err)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func withFee(r chains.SignRequest, fee chains.Spend) chains.SignRequest {
	r.Fee = &fee
	return r
}

// feeOf is the relayer fee spendOf's payment pays (its own key).
func feeOf(agent string, chain chains.ID, amount int64) chains.Spend {
	f := spendOf(agent, chain, amount)
	f.Key = chains.RelayerFeeKey(f.Key)
	f.Recipient = "relayer"
	return f
}
