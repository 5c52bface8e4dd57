package enclave

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	secpstealth "github.com/veilhq/veil/chains/stealth/secp256k1"
)

// Software attestation constants (docs/enclave.md, "Attestation").
const (
	ProviderSoftware      = "software"
	KeyTypeEd25519        = "ed25519"
	QuoteSoftwareEd25519  = "software-ed25519"
	reportDataHeader      = "veil/attestation/report-data/v1"
	softwareStatementHead = "Veil software enclave attestation v1"
)

// dstack attestation constants (docs/enclave.md, "dstack provider"): the
// quote is an Intel TDX DCAP quote (lower-case hex) whose report data is
// the 32 bytes of ReportData followed by 32 zero bytes; its signing key
// is certified by Intel (PCK chain), so Info names no attestation key.
const (
	ProviderDstack = "dstack"
	QuoteTDX       = "tdx"
	KeyTypeTDXDCAP = "tdx-dcap"
)

// ReportDataInput is the canonical encoding that ReportData hashes: lines
// ending in "\n",
//
//	veil/attestation/report-data/v1
//	agentId <agentID>
//	key <chain> <epoch> <address> <metaAddress> <accountPublicKey hex>   (one per chain, in chains.Order())
//	nonce <hex of the nonce bytes>
//
// No field can contain a space or a newline (agent ids are checked by
// CheckAgentID, the nonce is hex-encoded, the keys come from the
// derivation), so the encoding is unambiguous. Chains not in keys are
// skipped; a chain outside chains.Order() is an error.
func ReportDataInput(agentID string, keys map[chains.ID]AttestedKeys, nonce []byte) ([]byte, error) {
	if err := CheckAgentID(agentID); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(reportDataHeader + "\n")
	b.WriteString("agentId " + agentID + "\n")
	seen := 0
	for _, c := range chains.Order() {
		k, ok := keys[c]
		if !ok {
			continue
		}
		seen++
		for _, f := range []string{k.Address, k.MetaAddress, k.AccountPublicKey} {
			if f == "" || strings.ContainsAny(f, " \n\r\t") {
				return nil, invalid("public key fields of %s must be non-empty and contain no white space", c)
			}
		}
		fmt.Fprintf(&b, "key %s %d %s %s %s\n", c, k.Epoch, k.Address, k.MetaAddress, k.AccountPublicKey)
	}
	if seen != len(keys) {
		return nil, invalid("public keys name an unknown chain")
	}
	b.WriteString("nonce " + hex.EncodeToString(nonce) + "\n")
	return b.Bytes(), nil
}

// ReportData returns hex(SHA-256(ReportDataInput(...))).
func ReportData(agentID string, keys map[chains.ID]AttestedKeys, nonce []byte) (string, error) {
	in, err := ReportDataInput(agentID, keys, nonce)
	if err != nil {
		return "", err
	}
	d := sha256.Sum256(in)
	return hex.EncodeToString(d[:]), nil
}

// SoftwareStatement is the exact text the software provider signs for att
// (Quote and Statement are ignored), with the attestation key of info: lines
// ending in "\n",
//
//	Veil software enclave attestation v1
//	provider: software
//	measurement: <att.Measurement>
//	instanceId: <att.InstanceID>
//	attestationPublicKey: <info.AttestationPublicKey>
//	agentId: <att.AgentID>
//	reportData: <att.ReportData>
//	nonce: <hex of the nonce bytes>
//	issuedAt: <att.IssuedAt>
func SoftwareStatement(info Info, att Attestation) string {
	var b strings.Builder
	line := func(k, v string) { b.WriteString(k + ": " + v + "\n") }
	b.WriteString(softwareStatementHead + "\n")
	line("provider", att.Provider)
	line("measurement", att.Measurement)
	line("instanceId", att.InstanceID)
	line("attestationPublicKey", info.AttestationPublicKey)
	line("agentId", att.AgentID)
	line("reportData", att.ReportData)
	line("nonce", hex.EncodeToString([]byte(att.Nonce)))
	line("issuedAt", att.IssuedAt)
	return b.String()
}

// FormatIssuedAt formats t as attestations carry it: RFC 3339, UTC, whole
// seconds.
func FormatIssuedAt(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// AttestedKeysOf converts derived public keys to their attested form.
func AttestedKeysOf(k PublicKeys) AttestedKeys {
	return AttestedKeys{
		Epoch:            k.Epoch,
		Address:          k.Address,
		MetaAddress:      k.MetaAddress,
		AccountPublicKey: hex.EncodeToString(k.AccountPublicKey),
	}
}

// VerifySoftwareAttestation checks a software attestation against the
// provider's Info using public data only: the attestation key and
// measurement of info, every public key (each address must be the
// address of its account public key, each meta-address valid for its
// chain), the report data recomputed from the keys and the nonce, and the
// ed25519 signature over the statement rebuilt from the fields. It does not
// check freshness: the caller compares att.Nonce with the nonce it sent
// (and may bound att.IssuedAt). Every failure wraps ErrAttestation.
func VerifySoftwareAttestation(info Info, att Attestation) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrAttestation, fmt.Sprintf(format, args...))
	}
	if info.Provider != ProviderSoftware || att.Provider != ProviderSoftware {
		return fail("provider is not %q", ProviderSoftware)
	}
	if info.AttestationKeyType != KeyTypeEd25519 || att.QuoteType != QuoteSoftwareEd25519 {
		return fail("attestation key or quote type is not %s", KeyTypeEd25519)
	}
	pub, err := hex.DecodeString(info.AttestationPublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize || info.AttestationPublicKey != strings.ToLower(info.AttestationPublicKey) {
		return fail("attestation public key is not 64 lower-case hex digits")
	}
	if att.Measurement != info.Measurement {
		return fail("measurement differs from the provider's")
	}
	if err := CheckAgentID(att.AgentID); err != nil {
		return fail("agent id: %v", err)
	}
	if err := CheckNonce([]byte(att.Nonce)); err != nil {
		return fail("nonce: %v", err)
	}
	if len(att.PublicKeys) == 0 {
		return fail("no public keys")
	}
	for c, k := range att.PublicKeys {
		if err := checkAttestedKeys(c, k); err != nil {
			return fail("%s: %v", c, err)
		}
	}
	rd, err := ReportData(att.AgentID, att.PublicKeys, []byte(att.Nonce))
	if err != nil {
		return fail("report data: %v", err)
	}
	if rd != att.ReportData {
		return fail("report data does not match the agent id, public keys and nonce")
	}
	t, err := time.Parse(time.RFC3339, att.IssuedAt)
	if err != nil || FormatIssuedAt(t) != att.IssuedAt {
		return fail("issuedAt is not an RFC 3339 UTC time in whole seconds")
	}
	st := SoftwareStatement(info, att)
	if att.Statement != "" && att.Statement != st {
		return fail("statement does not match the attested fields")
	}
	sig, err := base64.StdEncoding.DecodeString(att.Quote)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fail("quote is not a base64 ed25519 signature")
	}
	if !ed25519.Verify(ed25519.PublicKey(pub), []byte(st), sig) {
		return fail("signature does not verify with the attestation public key")
	}
	return nil
}

func checkAttestedKeys(c chains.ID, k AttestedKeys) error {
	if err := CheckChain(c); err != nil {
		return err
	}
	pub, err := hex.DecodeString(k.AccountPublicKey)
	if err != nil || hex.EncodeToString(pub) != k.AccountPublicKey {
		return fmt.Errorf("account public key is not lower-case hex")
	}
	addr, err := AccountAddress(c, pub)
	if err != nil {
		return err
	}
	if addr != k.Address {
		return fmt.Errorf("address is not the account public key's")
	}
	switch c.Family() {
	case chains.FamilyEVM:
		m, err := secpstealth.ParseMetaAddress(k.MetaAddress)
		if err != nil || m.String() != k.MetaAddress {
			return fmt.Errorf("meta-address is not a canonical st:eth: meta-address")
		}
	default:
		want := edstealth.Stellar
		if c == chains.Solana {
			want = edstealth.Solana
		}
		m, err := edstealth.ParseMetaAddressFor(want, k.MetaAddress)
		if err != nil || m.String() != k.MetaAddress {
			return fmt.Errorf("meta-address is not a canonical %s meta-address", want.Prefix())
		}
	}
	return nil
}

// VerifyReportData checks the provider-independent part of an attestation
// using public data only: the agent id and the nonce are well-formed,
// there is at least one chain, every chain's address is the address of its
// account public key and its meta-address is canonical, and att.ReportData
// is the report data of these keys and the nonce. It returns the 32 report
// data bytes a quote must carry. Failures wrap ErrAttestation.
func VerifyReportData(att Attestation) ([32]byte, error) {
	var out [32]byte
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrAttestation, fmt.Sprintf(format, args...))
	}
	if err := CheckAgentID(att.AgentID); err != nil {
		return out, fail("agent id: %v", err)
	}
	if err := CheckNonce([]byte(att.Nonce)); err != nil {
		return out, fail("nonce: %v", err)
	}
	if len(att.PublicKeys) == 0 {
		return out, fail("no public keys")
	}
	for c, k := range att.PublicKeys {
		if err := checkAttestedKeys(c, k); err != nil {
			return out, fail("%s: %v", c, err)
		}
	}
	rd, err := ReportData(att.AgentID, att.PublicKeys, []byte(att.Nonce))
	if err != nil {
		return out, fail("report data: %v", err)
	}
	if rd != att.ReportData {
		return out, fail("report data does not match the agent id, public keys and nonce")
	}
	if _, err := hex.Decode(out[:], []byte(rd)); err != nil {
		return out, fail("report data is not hex")
	}
	return out, nil
}
