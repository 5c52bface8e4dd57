package agent

import (
	"encoding/hex"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"github.com/veilhq/veil/chains"
	edstealth "github.com/veilhq/veil/chains/stealth/ed25519"
	secpstealth "github.com/veilhq/veil/chains/stealth/secp256k1"
	"github.com/veilhq/veil/enclave"
)

// matcherFor returns a function that picks, from a page of announcements,
// the indexes addressed to the holder of keys. Malformed announcements
// (anyone can announce anything) are skipped, never fatal.
func matcherFor(id chains.ID, keys enclave.ScanKeys) (func([]chains.Announcement) []int, error) {
	if id.Family() == chains.FamilyEVM {
		entry, err := keys.Secp256k1Entry()
		if err != nil {
			return nil, err
		}
		sc, err := secpstealth.NewScanner([]secpstealth.ViewKeyEntry{entry})
		if err != nil {
			return nil, err
		}
		return func(anns []chains.Announcement) []int {
			decoded := make([]secpstealth.Announcement, 0, len(anns))
			index := make([]int, 0, len(anns))
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
			var out []int
			for _, m := range sc.Scan(decoded) {
				out = append(out, index[m.Announcement])
			}
			return out
		}, nil
	}
	entry, err := keys.Ed25519Entry()
	if err != nil {
		return nil, err
	}
	sc, err := edstealth.NewScanner([]edstealth.ViewKeyEntry{entry})
	if err != nil {
		return nil, err
	}
	parse := edstealth.ParseStellarAddress
	if id == chains.Solana {
		parse = edstealth.ParseSolanaAddress
	}
	return func(anns []chains.Announcement) []int {
		decoded := make([]edstealth.Announcement, 0, len(anns))
		index := make([]int, 0, len(anns))
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
		var out []int
		for _, m := range sc.Scan(decoded) {
			out = append(out, index[m.Announcement])
		}
		return out
	}, nil
}

func encodeHex(b []byte) string { return hex.EncodeToString(b) }

func decodeHex(s string) ([]byte, error) {
	return hex.DecodeString(strings.TrimPrefix(s, "0x"))
}
