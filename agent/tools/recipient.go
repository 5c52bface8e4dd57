package tools

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/sha3"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	"github.com/veilhq/veil/chains/stealth/secp256k1"
)

// recipient is a resolved payee.
type recipient struct {
	// display is how results name it: "bob.veil" or the meta-address.
	display string
	// name is the bare Veil name ("" for a meta-address).
	name string
	// meta maps each chain the recipient can be paid on to the
	// meta-address to pay there (names).
	meta map[chains.ID]string
	// family and metaAddr are set for a meta-address recipient.
	family   chains.Family
	metaAddr string
	// fixed is the one chain a st:xlm / st:sol meta-address names.
	fixed chains.ID
}

func (r *recipient) canPay(c chains.ID) bool {
	if r.metaAddr != "" {
		return c.Family() == r.family
	}
	_, ok := r.meta[c]
	return ok
}

func (r *recipient) metaFor(c chains.ID) string {
	if r.metaAddr != "" {
		return r.metaAddr
	}
	return r.meta[c]
}

// veilName is the name people read of a named recipient ("bob.veil"),
// "" for a meta-address.
func (r *recipient) veilName() string {
	if r.metaAddr != "" {
		return ""
	}
	return r.display
}

func (r *recipient) chains() []chains.ID {
	var out []chains.ID
	for _, c := range chains.Order() {
		if r.canPay(c) {
			out = append(out, c)
		}
	}
	return out
}

func (r *recipient) notOn(c chains.ID, shared []chains.ID) error {
	return fmt.Errorf("%w: %s cannot be paid on %s; chains you both use: %s", ErrInvalidArgs, clip(r.display, 40), c, chainList(shared))
}

func (r *recipient) noShared(mine []chains.ID) error {
	return fmt.Errorf("%w: you and %s share no chain: you are on %s, %s is on %s", ErrInvalidArgs, clip(r.display, 40), chainList(mine), clip(r.display, 40), chainList(r.chains()))
}

// parseMeta checks a stealth meta-address and returns its family.
func parseMeta(s string) (chains.Family, chains.ID, error) {
	switch {
	case strings.HasPrefix(s, secp256k1.Prefix):
		if _, err := secp256k1.ParseMetaAddress(s); err != nil {
			return "", "", fmt.Errorf("%w: meta-address: %v", chains.ErrInvalidAddress, err)
		}
		return chains.FamilyEVM, "", nil
	case strings.HasPrefix(s, edstealth.Stellar.Prefix()):
		if _, err := edstealth.ParseMetaAddressFor(edstealth.Stellar, s); err != nil {
			return "", "", fmt.Errorf("%w: meta-address: %v", chains.ErrInvalidAddress, err)
		}
		return chains.FamilyStellar, chains.Stellar, nil
	case strings.HasPrefix(s, edstealth.Solana.Prefix()):
		if _, err := edstealth.ParseMetaAddressFor(edstealth.Solana, s); err != nil {
			return "", "", fmt.Errorf("%w: meta-address: %v", chains.ErrInvalidAddress, err)
		}
		return chains.FamilySolana, chains.Solana, nil
	}
	return "", "", fmt.Errorf("%w %q: a meta-address starts with st:eth:0x, st:xlm: or st:sol: and then its keys in hex", chains.ErrInvalidAddress, clip(s, 24))
}

// resolveRecipient turns a recipient argument into a payee. Names go to
// the Directory (Veil's agents); when onChain is set, a name the Directory
// does not know is looked up in the on-chain registry of the chains in
// scope (chain, the chain argument as chainArg read it, else every chain
// of the agent).
func resolveRecipient(ctx context.Context, env *Env, arg string, chain chains.ID, onChain bool) (*recipient, error) {
	s := strings.TrimSpace(arg)
	if strings.HasPrefix(strings.ToLower(s), "st:") {
		fam, fixed, err := parseMeta(s)
		if err != nil {
			return nil, err
		}
		for _, own := range env.Agent.MetaAddresses {
			if strings.EqualFold(own, s) {
				return nil, fmt.Errorf("%w: that is this agent's own meta-address; a payment to yourself is refused", ErrInvalidArgs)
			}
		}
		return &recipient{display: s, family: fam, metaAddr: s, fixed: fixed}, nil
	}
	if looksLikePlainAddress(s) {
		return nil, fmt.Errorf("%w: %q is a plain address; payments go to a Veil name (bob or bob.veil) or a stealth meta-address (st:eth:0x…, st:xlm:…, st:sol:…). To move received funds to a plain address, use withdraw", ErrInvalidArgs, clip(s, 24))
	}
	name, err := chains.ParseName(s)
	if err != nil {
		return nil, err
	}
	if name == env.Agent.Name {
		return nil, fmt.Errorf("%w: %s%s is this agent; a payment to yourself is refused", ErrInvalidArgs, name, chains.NameSuffix)
	}
	if env.Directory == nil {
		return nil, fmt.Errorf("%w: no agent directory", ErrNotConfigured)
	}
	found, err := env.Directory.LookupAgent(ctx, name)
	if err == nil {
		rc := &recipient{display: name + chains.NameSuffix, name: name, meta: map[chains.ID]string{}}
		for _, c := range found.Chains {
			if m := found.MetaAddresses[c]; m != "" {
				rc.meta[c] = m
			}
		}
		if len(rc.meta) == 0 {
			return nil, fmt.Errorf("%w: %s%s has no meta-address on any chain yet", ErrUnknownRecipient, name, chains.NameSuffix)
		}
		return rc, nil
	}
	if !errors.Is(err, ErrUnknownRecipient) {
		return nil, fmt.Errorf("looking up %s%s failed: %w", name, chains.NameSuffix, err)
	}
	if !onChain || env.Chains == nil {
		return nil, fmt.Errorf("%w: no Veil agent is named %s%s", ErrUnknownRecipient, name, chains.NameSuffix)
	}
	in := scope(env, chain)
	if len(in) == 0 {
		return nil, fmt.Errorf("%w: the agent is not deployed on any chain", ErrNotConfigured)
	}
	rc := &recipient{display: name + chains.NameSuffix, name: name, meta: map[chains.ID]string{}}
	var unavailable []chains.ID
	for _, c := range in {
		m, err := env.Chains.ResolveName(ctx, c, name)
		switch {
		case err == nil:
			if fam, _, perr := parseMeta(m); perr == nil && fam == c.Family() {
				rc.meta[c] = m
			}
		case errors.Is(err, chains.ErrNotFound):
		default:
			unavailable = append(unavailable, c)
		}
	}
	if len(rc.meta) > 0 {
		return rc, nil
	}
	if len(unavailable) > 0 {
		return nil, fmt.Errorf("%w: %s%s is not a Veil agent, and the on-chain name lookup failed on %s; try again later", chains.ErrUnavailable, name, chains.NameSuffix, chainList(unavailable))
	}
	return nil, fmt.Errorf("%w: no Veil agent or on-chain name %s%s (looked on %s)", ErrUnknownRecipient, name, chains.NameSuffix, chainList(in))
}

func looksLikePlainAddress(s string) bool {
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		return true
	}
	if len(s) == 56 && s[0] == 'G' {
		return true
	}
	if len(s) >= 32 && len(s) <= 44 {
		if _, err := edstealth.ParseSolanaAddress(s); err == nil {
			return true
		}
	}
	return false
}

// ParseAddress checks a plain address for chain's family: 0x + 40 hex for
// EVM (EIP-55 checksum enforced when mixed-case; the result is
// checksummed), a G… account id for Stellar, base58 of 32 bytes for Solana.
func ParseAddress(c chains.ID, s string) (string, error) {
	switch c.Family() {
	case chains.FamilyEVM:
		if len(s) != 42 || (s[:2] != "0x" && s[:2] != "0X") {
			return "", fmt.Errorf("%w %q for %s: an EVM address is 0x followed by 40 hex digits", chains.ErrInvalidAddress, clip(s, 48), c)
		}
		h := s[2:]
		raw, err := hex.DecodeString(h)
		if err != nil {
			return "", fmt.Errorf("%w %q for %s: an EVM address is 0x followed by 40 hex digits", chains.ErrInvalidAddress, clip(s, 48), c)
		}
		zero := true
		for _, b := range raw {
			zero = zero && b == 0
		}
		if zero {
			return "", fmt.Errorf("%w: the zero address burns funds", chains.ErrInvalidAddress)
		}
		if h != strings.ToLower(h) && h != strings.ToUpper(h) && checksumHex(h) != h {
			return "", fmt.Errorf("%w %q: mixed-case EVM address with a wrong EIP-55 checksum (a typo?)", chains.ErrInvalidAddress, s)
		}
		return "0x" + checksumHex(strings.ToLower(h)), nil
	case chains.FamilyStellar:
		if _, err := edstealth.ParseStellarAddress(s); err != nil {
			return "", fmt.Errorf("%w %q for stellar: a Stellar account id is a G… StrKey of 56 characters", chains.ErrInvalidAddress, clip(s, 60))
		}
		return s, nil
	default:
		if _, err := edstealth.ParseSolanaAddress(s); err != nil {
			return "", fmt.Errorf("%w %q for solana: a Solana address is 32 bytes in base58", chains.ErrInvalidAddress, clip(s, 48))
		}
		return s, nil
	}
}

// checksumHex applies EIP-55 to 40 lower-case hex digits.
func checksumHex(lower string) string {
	lower = strings.ToLower(lower)
	h := sha3.NewLegacyKeccak256()
	h.Write([]byte(lower))
	sum := h.Sum(nil)
	out := []byte(lower)
	for i, ch := range out {
		if ch >= 'a' && ch <= 'f' {
			nib := sum[i/2]
			if i%2 == 0 {
				nib >>= 4
			}
			if nib&0x0f >= 8 {
				out[i] = ch - 'a' + 'A'
			}
		}
	}
	return string(out)
}

// addressFamily guesses the family of a plain address from its form.
func addressFamily(s string) (chains.Family, bool) {
	switch {
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		return chains.FamilyEVM, true
	case len(s) == 56 && s[0] == 'G':
		return chains.FamilyStellar, true
	case len(s) >= 32 && len(s) <= 44:
		return chains.FamilySolana, true
	}
	return "", false
}
