package x402_test

import (
	"encoding/base64"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm/eip3009"
	"github.com/veilhq/veil/chains/evm/x402"
)

const (
	token = "0x00000000000000000000000000000000000000C0"
	payTo = "0x00000000000000000000000000000000000000B0"
)

var now = time.Unix(1_800_000_000, 0)

func requirement() x402.Requirements {
	return x402.Requirements{Scheme: x402.SchemeExact, Network: "eip155:84532", Amount: "2500000", Asset: token, PayTo: payTo,
		MaxTimeoutSeconds: 300, Extra: &x402.Extra{Name: "USDC (Veil test token)", Version: "2"}}
}

// signed is a payload paying req, signed by a fresh key, after mod changed
// the authorization.
func signed(t *testing.T, req x402.Requirements, mod func(*chains.TransferAuthorization)) x402.Payload {
	t.Helper()
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	amt, _ := new(big.Int).SetString(req.Amount, 10)
	a := chains.TransferAuthorization{Name: req.Extra.Name, Version: req.Extra.Version, ChainID: big.NewInt(84532), Contract: req.Asset,
		From: crypto.PubkeyToAddress(key.PublicKey).Hex(), To: req.PayTo, Value: amt,
		ValidAfter: big.NewInt(0), ValidBefore: big.NewInt(now.Unix() + 300), Nonce: [32]byte{9}}
	if mod != nil {
		mod(&a)
	}
	sig, err := eip3009.SignWithKey(a, key)
	if err != nil {
		t.Fatal(err)
	}
	return x402.PayloadOf(req, nil, a, sig)
}

func TestVerify(t *testing.T) {
	req := requirement()
	if _, _, err := x402.Verify(signed(t, req, nil), req, now); err != nil {
		t.Fatalf("a good payment: %v", err)
	}
	for _, tc := range []struct {
		name   string
		p      func() x402.Payload
		reason string
	}{
		{"wrong amount", func() x402.Payload {
			return signed(t, req, func(a *chains.TransferAuthorization) { a.Value = big.NewInt(1) })
		}, x402.ReasonValue},
		{"wrong payTo", func() x402.Payload {
			return signed(t, req, func(a *chains.TransferAuthorization) { a.To = "0x00000000000000000000000000000000000000e1" })
		}, x402.ReasonRecipient},
		{"expired", func() x402.Payload {
			return signed(t, req, func(a *chains.TransferAuthorization) { a.ValidBefore = big.NewInt(now.Unix() - 1) })
		}, x402.ReasonExpired},
		{"expires before settlement", func() x402.Payload {
			return signed(t, req, func(a *chains.TransferAuthorization) { a.ValidBefore = big.NewInt(now.Unix() + 2) })
		}, x402.ReasonExpired},
		{"not yet valid", func() x402.Payload {
			return signed(t, req, func(a *chains.TransferAuthorization) { a.ValidAfter = big.NewInt(now.Unix() + 60) })
		}, x402.ReasonNotYetValid},
		{"another token's domain", func() x402.Payload {
			return signed(t, req, func(a *chains.TransferAuthorization) { a.Contract = "0x00000000000000000000000000000000000000c1" })
		}, x402.ReasonSignature},
		{"another chain", func() x402.Payload {
			return signed(t, req, func(a *chains.TransferAuthorization) { a.ChainID = big.NewInt(1) })
		}, x402.ReasonSignature},
		{"tampered after signing", func() x402.Payload {
			p := signed(t, req, nil)
			p.Payload.Authorization.From = "0x00000000000000000000000000000000000000a9"
			return p
		}, x402.ReasonSignature},
		{"network mismatch", func() x402.Payload {
			p := signed(t, req, nil)
			p.Accepted.Network = "eip155:1"
			return p
		}, x402.ReasonNetwork},
		{"asset mismatch", func() x402.Payload {
			p := signed(t, req, nil)
			p.Accepted.Asset = "0x00000000000000000000000000000000000000c1"
			return p
		}, x402.ReasonAsset},
		{"version 1", func() x402.Payload {
			p := signed(t, req, nil)
			p.X402Version = 1
			return p
		}, x402.ReasonVersion},
		{"short signature", func() x402.Payload {
			p := signed(t, req, nil)
			p.Payload.Signature = p.Payload.Signature[:100]
			return p
		}, x402.ReasonPayload},
		{"nonce not 32 bytes", func() x402.Payload {
			p := signed(t, req, nil)
			p.Payload.Authorization.Nonce = "0x01"
			return p
		}, x402.ReasonPayload},
		{"value not a number", func() x402.Payload {
			p := signed(t, req, nil)
			p.Payload.Authorization.Value = "2.5"
			return p
		}, x402.ReasonPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := x402.Verify(tc.p(), req, now)
			if !errors.Is(err, x402.ErrInvalid) || x402.ReasonOf(err) != tc.reason {
				t.Fatalf("err = %v, want reason %s", err, tc.reason)
			}
		})
	}
}

func TestDecodeMalformed(t *testing.T) {
	for _, h := range []string{"", "not base64!", base64.StdEncoding.EncodeToString([]byte("[1,2]")),
		base64.StdEncoding.EncodeToString([]byte(`{"x402Version":"two"}`)), strings.Repeat("A", x402.MaxHeader+4)} {
		var p x402.Payload
		if err := x402.Decode(h, &p); !errors.Is(err, x402.ErrMalformed) {
			t.Errorf("Decode(%.20q) = %v, want ErrMalformed", h, err)
		}
	}
	if _, err := x402.ChainID("eip155:084532"); err == nil {
		t.Error("a chain id with a leading zero was accepted")
	}
}
