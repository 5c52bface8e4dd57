package agent

import (
	"encoding/hex"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	secpstealth "github.com/veilhq/veil/chains/stealth/secp256k1"
	"github.com/veilhq/veil/enclave"
)

// DecodeSecp256k1 turns EVM announcements into the secp256k1 scanner's
// form; index[i] is the position in anns of decoded[i]. Malformed
// announcements (anyone can announce anything) are skipped, never fatal.
func DecodeSecp256k1(anns []chains.Announcement) (decoded []secpstealth.Announcement, index []int) {
	decoded = make([]secpstealth.Announcement, 0, len(anns))
	index = make([]int, 0, len(anns))
	for i, a := range anns {
		if !common.IsHexAddress(a.StealthAddress) {
			continue
		}
		d, err := secpstealth.DecodeAnnouncement(common.HexToAddress(a.StealthAddress).Bytes(), a.EphemeralPubKey, []byte{a.ViewTag})
		if err != nil {
			continue
		}
		decoded = append(decoded, d)
		index = append(index, i)
	}
	return decoded, index
}

// DecodeEd25519 is DecodeSecp256k1 for Stellar and Solana announcements.
func DecodeEd25519(id chains.ID, anns []chains.Announcement) (decoded []edstealth.Announcement, index []int) {
	parse := edstealth.ParseStellarAddress
	if id == chains.Solana {
		parse = edstealth.ParseSolanaAddress
	}
	decoded = make([]edstealth.Announcement, 0, len(anns))
	index = make([]int, 0, len(anns))
	for i, a := range anns {
		pub, err := parse(a.StealthAddress)
		if err != nil {
			continue
		}
		payload := append([]byte{a.ViewTag}, a.EphemeralPubKey...)
		d, err := edstealth.DecodeAnnouncement(pub[:], payload)
		if err != nil {
			continue
		}
		decoded = append(decoded, d)
		index = append(index, i)
	}
	return decoded, index
}

// matcherFor returns a function that picks, from a page of announcements,
// the indexes addressed to the holder of keys.
func matcherFor(id chains.ID, keys enclave.ScanKeys) (func([]chains.Announcement) []int, error) {
	if id.Family() == chains.FamilyEVM {
		return matcherOf(keys.Secp256k1Entry, secpstealth.NewScanner, DecodeSecp256k1)
	}
	return matcherOf(keys.Ed25519Entry, edstealth.NewScanner, func(anns []chains.Announcement) ([]edstealth.Announcement, []int) {
		return DecodeEd25519(id, anns)
	})
}

// matcherOf is matcherFor on one curve: a scanner over the holder's view
// key entry, fed the announcements that decode turns into its form.
func matcherOf[E, A any, S interface{ Scan([]A) []stealth.Match }](
	entry func() (E, error), newScanner func([]E) (S, error), decode func([]chains.Announcement) ([]A, []int),
) (func([]chains.Announcement) []int, error) {
	e, err := entry()
	if err != nil {
		return nil, err
	}
	sc, err := newScanner([]E{e})
	if err != nil {
		return nil, err
	}
	return func(anns []chains.Announcement) []int {
		decoded, index := decode(anns)
		ms := sc.Scan(decoded)
		out := make([]int, 0, len(ms))
		for _, m := range ms {
			out = append(out, index[m.Announcement])
		}
		return out
	}, nil
}

func encodeHex(b []byte) string { return hex.EncodeToString(b) }

func decodeHex(s string) ([]byte, error) {
	return hex.DecodeString(strings.TrimPrefix(s, "0x"))
}
