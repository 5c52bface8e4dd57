// Package software is Veil's default enclave provider: every key derives
// from a 32-byte root secret with HKDF-SHA256, and the root is either sealed
// in the data directory (<data>/enclave/root.seal, mode 0600, created with
// crypto/rand on first start) or given in the configuration (cluster
// members, which must all derive the same keys). Without a passphrase
// "sealed" means protected by file permissions only: anyone who can read
// the file, or the process's memory, has every agent's keys; with one
// (OpenWithPassphrase, sealcrypt.go) the file is encrypted with a key
// derived by argon2id. docs/enclave.md has the exact derivation, file
// formats and attestation format.
package software

import (
	"context"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/internal/keys"
)

// Where the root came from (Provider.RootSource).
const (
	SourceSealed     = "sealed"     // read from the seal file
	SourceCreated    = "created"    // created now and sealed
	SourceConfigured = "configured" // given in the configuration
	SourceDirect     = "direct"     // given to New (tests, tools)
)

// keyring is keys.Locked under an unexported name: embedded, it gives the
// provider its key methods without an exported field.
type keyring = keys.Locked

// Provider is the software enclave. It is safe for concurrent use.
type Provider struct {
	// keyring gives the provider DeriveKeys, Sign, ScanKeys and Export
	// (keys.Locked: checks, the KDF under mu held for reading, zeroing).
	keyring

	mu      sync.RWMutex
	prk     []byte // HKDF-Extract(salt = none, IKM = root); nil once closed
	attPriv ed25519.PrivateKey
	info    enclave.Info
	source  string
	now     func() time.Time
}

var _ enclave.Provider = (*Provider)(nil)

// Open starts the software provider for the data directory dataDir. When
// rootHex is non-empty it is the root (64 hex digits, optional 0x,
// surrounding white space ignored), the seal file is neither read nor
// written, and dataDir may be empty; otherwise the root is read from
// <dataDir>/enclave/root.seal, which is created (directory 0700, file 0600,
// written atomically) when it does not exist. Open refuses a seal file
// whose mode is looser than 0600, that is not a regular file or that is
// malformed (errors match ErrSeal and name the file), and an all-zero root.
func Open(dataDir, rootHex string) (*Provider, error) {
	return OpenWithPassphrase(dataDir, rootHex, nil)
}

// OpenWithPassphrase is Open for a seal encrypted under pass (argon2id and
// AES-256-GCM, docs/enclave.md): a new seal is created encrypted; an
// existing encrypted seal opens only with its passphrase (ErrPassphrase,
// the file unchanged); a plain seal is refused while a passphrase is set
// (encrypt it with Reseal). An empty pass is Open. pass is not kept.
func OpenWithPassphrase(dataDir, rootHex string, pass []byte) (*Provider, error) {
	var root [32]byte
	defer clear(root[:])
	source := SourceConfigured
	if strings.TrimSpace(rootHex) != "" {
		var err error
		if root, err = parseRootHex(rootHex); err != nil {
			return nil, err
		}
	} else {
		if dataDir == "" {
			return nil, fmt.Errorf("enclave: no data directory and no configured root")
		}
		var created bool
		var err error
		if root, created, err = loadOrCreateSeal(dataDir, pass); err != nil {
			return nil, err
		}
		source = SourceSealed
		if created {
			source = SourceCreated
		}
	}
	p, err := newProvider(root, source)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// New returns a provider for root, touching no file. It accepts any root,
// including the all-zero root of the documented test vector; production
// code uses Open.
func New(root [32]byte) (*Provider, error) { return newProvider(root, SourceDirect) }

func parseRootHex(s string) ([32]byte, error) {
	var root [32]byte
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	// Error messages never quote the value.
	if len(s) != 64 {
		return root, fmt.Errorf("%w: the configured enclave root must be 64 hex digits (32 bytes)", enclave.ErrInvalidInput)
	}
	if _, err := hex.Decode(root[:], []byte(s)); err != nil {
		clear(root[:])
		return root, fmt.Errorf("%w: the configured enclave root must be 64 hex digits (32 bytes)", enclave.ErrInvalidInput)
	}
	if isZero(&root) {
		return root, fmt.Errorf("%w: the configured enclave root is all zero", enclave.ErrInvalidInput)
	}
	return root, nil
}

func newProvider(root [32]byte, source string) (*Provider, error) {
	prk, err := hkdf.Extract(sha256.New, root[:], nil)
	if err != nil {
		return nil, fmt.Errorf("enclave: hkdf: %w", err)
	}
	p := &Provider{prk: prk, source: source, now: time.Now}
	p.keyring = keys.NewLocked(&p.mu, p.kdf)
	seed, err := p.kdf(enclave.AttestationKeyPath)
	if err != nil {
		return nil, err
	}
	p.attPriv = ed25519.NewKeyFromSeed(seed[:])
	clear(seed[:])
	var inst [16]byte
	if _, err := io.ReadFull(rand.Reader, inst[:]); err != nil {
		return nil, fmt.Errorf("enclave: instance id: %w", err)
	}
	p.info = enclave.Info{
		Provider:             enclave.ProviderSoftware,
		Measurement:          Measurement(),
		InstanceID:           hex.EncodeToString(inst[:]),
		AttestationKeyType:   enclave.KeyTypeEd25519,
		AttestationPublicKey: hex.EncodeToString(p.attPriv.Public().(ed25519.PublicKey)),
		Note:                 enclave.SoftwareNote,
	}
	return p, nil
}

// Measurement is "sha256:<hex>" of the running executable, computed once
// per process ("sha256:unavailable" if it cannot be read).
func Measurement() string { return measurement() }

var measurement = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return "sha256:unavailable"
	}
	f, err := os.Open(exe)
	if err != nil {
		return "sha256:unavailable"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "sha256:unavailable"
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
})

// RootSource says where the root came from: SourceSealed, SourceCreated,
// SourceConfigured or SourceDirect.
func (p *Provider) RootSource() string { return p.source }

// Close forgets the root and every key derived from it (best effort: Go
// may have copied memory). Later calls return enclave.ErrUnavailable.
func (p *Provider) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.prk)
	clear(p.attPriv)
	p.prk, p.attPriv = nil, nil
	return nil
}

// kdf is HKDF-Expand(PRK, info = path, 32 bytes). The caller holds mu (or
// is newProvider).
func (p *Provider) kdf(path string) ([32]byte, error) { return keys.HKDF(p.prk, path) }

// Info implements enclave.Provider.
func (p *Provider) Info(ctx context.Context) (enclave.Info, error) {
	if err := ctx.Err(); err != nil {
		return enclave.Info{}, err
	}
	return p.info, nil
}

// Attest implements enclave.Provider: it attests the keys of epoch 0 on
// every chain of chainIDs (duplicates ignored, at least one) and signs the
// statement of enclave.SoftwareStatement with the attestation key.
func (p *Provider) Attest(ctx context.Context, agentID string, chainIDs []chains.ID, nonce []byte) (enclave.Attestation, error) {
	att, err := p.Unquoted(ctx, p.info, enclave.QuoteSoftwareEd25519, agentID, chainIDs, nonce)
	if err != nil {
		return enclave.Attestation{}, err
	}
	att.IssuedAt = enclave.FormatIssuedAt(p.now())
	att.Statement = enclave.SoftwareStatement(p.info, att)
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.attPriv == nil {
		return enclave.Attestation{}, enclave.ErrUnavailable
	}
	att.Quote = base64.StdEncoding.EncodeToString(ed25519.Sign(p.attPriv, []byte(att.Statement)))
	return att, nil
}
