package software_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
)

func TestAttestationVerifies(t *testing.T) {
	p := mustNew(t, randomRoot(t))
	info, err := p.Info(bg)
	if err != nil {
		t.Fatal(err)
	}
	if info.Provider != "software" || info.AttestationKeyType != "ed25519" || len(info.AttestationPublicKey) != 64 ||
		!strings.HasPrefix(info.Measurement, "sha256:") || info.InstanceID == "" || !strings.Contains(info.Note, "not prove") {
		t.Fatalf("info = %+v", info)
	}
	nonce := []byte("client nonce ✓ 0123456789abcdef")
	att, err := p.Attest(bg, agent1, chains.Order(), nonce)
	if err != nil {
		t.Fatal(err)
	}
	if err := enclave.VerifySoftwareAttestation(info, att); err != nil {
		t.Fatalf("fresh attestation does not verify: %v", err)
	}
	if att.Nonce != string(nonce) || att.AgentID != agent1 || len(att.PublicKeys) != 6 {
		t.Fatalf("attestation = %+v", att)
	}
	for _, c := range chains.Order() {
		k := derive(t, p, agent1, c, 0)
		a := att.PublicKeys[c]
		if a.Address != k.Address || a.MetaAddress != k.MetaAddress || a.AccountPublicKey != hex.EncodeToString(k.AccountPublicKey) {
			t.Fatalf("%s: attested keys differ from DeriveKeys", c)
		}
	}
	if ts, err := time.Parse(time.RFC3339, att.IssuedAt); err != nil || time.Since(ts) > time.Minute {
		t.Fatalf("issuedAt %q", att.IssuedAt)
	}

	// The report data is the documented hash, recomputed by hand here.
	var in strings.Builder
	in.WriteString("veil/attestation/report-data/v1\nagentId " + agent1 + "\n")
	for _, c := range chains.Order() {
		a := att.PublicKeys[c]
		in.WriteString("key " + string(c) + " 0 " + a.Address + " " + a.MetaAddress + " " + a.AccountPublicKey + "\n")
	}
	in.WriteString("nonce " + hex.EncodeToString(nonce) + "\n")
	d := sha256.Sum256([]byte(in.String()))
	if att.ReportData != hex.EncodeToString(d[:]) {
		t.Fatal("reportData is not the documented hash")
	}
	// The quote is an ed25519 signature over the documented statement.
	want := "Veil software enclave attestation v1\nprovider: software\nmeasurement: " + info.Measurement +
		"\ninstanceId: " + info.InstanceID + "\nattestationPublicKey: " + info.AttestationPublicKey +
		"\nagentId: " + agent1 + "\nreportData: " + att.ReportData + "\nnonce: " + hex.EncodeToString(nonce) +
		"\nissuedAt: " + att.IssuedAt + "\n"
	if att.Statement != want {
		t.Fatalf("statement:\n%s\nwant:\n%s", att.Statement, want)
	}
	pub, _ := hex.DecodeString(info.AttestationPublicKey)
	sig, _ := base64.StdEncoding.DecodeString(att.Quote)
	if !ed25519.Verify(pub, []byte(want), sig) {
		t.Fatal("quote is not a signature over the statement")
	}

	// It survives JSON (what the HTTP layer sends).
	b, _ := json.Marshal(att)
	var back enclave.Attestation
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := enclave.VerifySoftwareAttestation(info, back); err != nil {
		t.Fatalf("after JSON: %v", err)
	}
	for _, k := range []string{`"agentId"`, `"publicKeys"`, `"reportData"`, `"quote"`, `"nonce"`, `"issuedAt"`, `"metaAddress"`, `"accountPublicKey"`} {
		if !strings.Contains(string(b), k) {
			t.Fatalf("JSON lacks %s: %s", k, b)
		}
	}

	// Without the (optional) statement text it still verifies.
	noStmt := att
	noStmt.Statement = ""
	if err := enclave.VerifySoftwareAttestation(info, noStmt); err != nil {
		t.Fatal(err)
	}
}

func TestAttestationTamper(t *testing.T) {
	p := mustNew(t, randomRoot(t))
	info, _ := p.Info(bg)
	att, err := p.Attest(bg, agent1, []chains.ID{chains.Ethereum, chains.Stellar, chains.Solana}, []byte("n-1"))
	if err != nil {
		t.Fatal(err)
	}
	other := mustNew(t, randomRoot(t))
	otherInfo, _ := other.Info(bg)
	otherAtt, _ := other.Attest(bg, agent1, []chains.ID{chains.Ethereum, chains.Stellar, chains.Solana}, []byte("n-1"))
	otherKeys := derive(t, other, agent1, chains.Ethereum, 0)

	flip := func(s string) string {
		b := []byte(s)
		i := len(b) / 2
		if b[i] == 'a' {
			b[i] = 'b'
		} else {
			b[i] = 'a'
		}
		return string(b)
	}
	withKeys := func(a enclave.Attestation, f func(m map[chains.ID]enclave.AttestedKeys)) enclave.Attestation {
		m := map[chains.ID]enclave.AttestedKeys{}
		for c, k := range a.PublicKeys {
			m[c] = k
		}
		f(m)
		a.PublicKeys = m
		return a
	}
	cases := map[string]func(enclave.Attestation, enclave.Info) (enclave.Attestation, enclave.Info){
		"agentId": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			a.AgentID = "00000000-0000-0000-0000-000000000002"
			return a, i
		},
		"nonce": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			a.Nonce = "n-2"
			return a, i
		},
		"empty nonce": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			a.Nonce = ""
			return a, i
		},
		"issuedAt": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			ts, _ := time.Parse(time.RFC3339, a.IssuedAt)
			a.IssuedAt = enclave.FormatIssuedAt(ts.Add(time.Second))
			return a, i
		},
		"issuedAt other spelling": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			a.IssuedAt = strings.Replace(a.IssuedAt, "Z", "+00:00", 1)
			return a, i
		},
		"reportData": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			a.ReportData = flip(a.ReportData)
			return a, i
		},
		"quote": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			sig, _ := base64.StdEncoding.DecodeString(a.Quote)
			sig[5] ^= 1
			a.Quote = base64.StdEncoding.EncodeToString(sig)
			return a, i
		},
		"quote not base64": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			a.Quote = "!!"
			return a, i
		},
		"statement": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			a.Statement += "extra\n"
			return a, i
		},
		"measurement": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			a.Measurement = "sha256:" + strings.Repeat("0", 64)
			return a, i
		},
		"info measurement": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			i.Measurement = "sha256:" + strings.Repeat("0", 64)
			return a, i
		},
		"instanceId": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			a.InstanceID = flip(a.InstanceID)
			return a, i
		},
		"provider": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			a.Provider = "dstack"
			return a, i
		},
		"quoteType": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			a.QuoteType = "tdx"
			return a, i
		},
		"other attestation key": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			return a, otherInfo
		},
		"signed by another root": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			return otherAtt, i
		},
		"address": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			return withKeys(a, func(m map[chains.ID]enclave.AttestedKeys) {
				k := m[chains.Ethereum]
				k.Address = otherKeys.Address
				m[chains.Ethereum] = k
			}), i
		},
		"address and account key": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			return withKeys(a, func(m map[chains.ID]enclave.AttestedKeys) {
				m[chains.Ethereum] = enclave.AttestedKeysOf(otherKeys)
			}), i
		},
		"meta-address": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			return withKeys(a, func(m map[chains.ID]enclave.AttestedKeys) {
				k := m[chains.Ethereum]
				k.MetaAddress = otherKeys.MetaAddress
				m[chains.Ethereum] = k
			}), i
		},
		"meta-address case": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			return withKeys(a, func(m map[chains.ID]enclave.AttestedKeys) {
				k := m[chains.Stellar]
				k.MetaAddress = "st:xlm:" + strings.ToUpper(k.MetaAddress[7:])
				m[chains.Stellar] = k
			}), i
		},
		"epoch": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			return withKeys(a, func(m map[chains.ID]enclave.AttestedKeys) {
				k := m[chains.Solana]
				k.Epoch = 1
				m[chains.Solana] = k
			}), i
		},
		"chain dropped": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			return withKeys(a, func(m map[chains.ID]enclave.AttestedKeys) { delete(m, chains.Solana) }), i
		},
		"chain swapped": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			return withKeys(a, func(m map[chains.ID]enclave.AttestedKeys) {
				m[chains.Base] = m[chains.Ethereum]
				delete(m, chains.Ethereum)
			}), i
		},
		"unknown chain": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			return withKeys(a, func(m map[chains.ID]enclave.AttestedKeys) { m["bitcoin"] = m[chains.Ethereum] }), i
		},
		"no keys": func(a enclave.Attestation, i enclave.Info) (enclave.Attestation, enclave.Info) {
			a.PublicKeys = nil
			return a, i
		},
	}
	if err := enclave.VerifySoftwareAttestation(info, att); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			a, i := mutate(att, info)
			err := enclave.VerifySoftwareAttestation(i, a)
			if err == nil {
				t.Fatal("tampered attestation verified")
			}
			if !errors.Is(err, enclave.ErrAttestation) {
				t.Fatalf("error %v does not match ErrAttestation", err)
			}
		})
	}
	// The untouched original still verifies (no case mutated it).
	if err := enclave.VerifySoftwareAttestation(info, att); err != nil {
		t.Fatal(err)
	}
}

func TestAttestInputs(t *testing.T) {
	p := mustNew(t, randomRoot(t))
	for _, n := range [][]byte{nil, {}, []byte(strings.Repeat("x", 129)), {0xff, 0xfe}, []byte("a\nb"), []byte("tab\t")} {
		if _, err := p.Attest(bg, agent1, []chains.ID{chains.Base}, n); !errors.Is(err, enclave.ErrInvalidInput) {
			t.Errorf("nonce %q: err = %v", n, err)
		}
	}
	if _, err := p.Attest(bg, agent1, []chains.ID{chains.Base}, []byte(strings.Repeat("é", 64))); err != nil {
		t.Errorf("128-byte UTF-8 nonce refused: %v", err)
	}
	if _, err := p.Attest(bg, agent1, nil, []byte("n")); !errors.Is(err, enclave.ErrInvalidInput) {
		t.Errorf("no chains: err = %v", err)
	}
	if _, err := p.Attest(bg, agent1, []chains.ID{"all"}, []byte("n")); !errors.Is(err, chains.ErrUnknownChain) {
		t.Errorf("chain all: err = %v", err)
	}
	if _, err := p.Attest(bg, "a/b", []chains.ID{chains.Base}, []byte("n")); !errors.Is(err, enclave.ErrInvalidInput) {
		t.Errorf("bad agent id: err = %v", err)
	}
	att, err := p.Attest(bg, agent1, []chains.ID{chains.Base, chains.Base, chains.Horizen, chains.Base}, []byte("n"))
	if err != nil || len(att.PublicKeys) != 2 {
		t.Fatalf("duplicate chains: %v, %d keys", err, len(att.PublicKeys))
	}
	info, _ := p.Info(bg)
	if err := enclave.VerifySoftwareAttestation(info, att); err != nil {
		t.Fatal(err)
	}
}
