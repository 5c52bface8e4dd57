// Package tdx parses Intel TDX DCAP quotes (versions 4 and 5, TD 1.0 and
// TD 1.5 report bodies) and the event log the dstack guest agent returns
// with a quote, and checks what can be checked without Intel's collateral:
// the quote's structure, the ECDSA signature of the quote's attestation key
// over its header and body, and the replay of the event log into the RTMRs.
//
// It does not establish that the attestation key belongs to genuine Intel
// hardware: that needs the QE report, the PCK certificate chain up to
// Intel's root and Intel's TCB collateral (PCS or a PCCS), which a DCAP
// verifier such as dcap-qvl or Intel's QVL checks. docs/enclave.md says how.
//
// Layout: Intel TDX DCAP Quoting Library API, appendix "Version 4 Quote
// Format" and "Version 5 Quote Format"; all integers are little-endian.
package tdx

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
)

// Quote format constants.
const (
	HeaderLen        = 48
	TDReport10Len    = 584
	TDReport15Len    = 648
	BodyDescLen      = 6 // version 5: body type (u16) and body size (u32)
	TEETypeTDX       = 0x00000081
	AttKeyECDSAP256  = 2
	BodyTypeTD10     = 2
	BodyTypeTD15     = 3
	ReportDataLen    = 64
	MeasurementLen   = 48
	sigLen           = 64
	attKeyLen        = 64
	MaxQuoteLen      = 1 << 20
	reportDataOffset = 520 // within a TD report body
)

// IntelQEVendorID is the QE vendor id of Intel's quoting enclave.
var IntelQEVendorID = [16]byte{0x93, 0x9A, 0x72, 0x33, 0xF7, 0x9C, 0x4C, 0xA9, 0x94, 0x0A, 0x0D, 0xB3, 0x95, 0x7F, 0x06, 0x07}

// ErrMalformed reports a quote or event log that does not parse.
var ErrMalformed = errors.New("tdx: malformed")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// Quote is a parsed TDX quote.
type Quote struct {
	Version            uint16
	AttestationKeyType uint16
	TEEType            uint32
	QESVN, PCESVN      uint16
	QEVendorID         [16]byte
	UserData           [20]byte
	// BodyType is BodyTypeTD10 or BodyTypeTD15 (version 4 quotes carry a
	// TD 1.0 body).
	BodyType uint16

	TEETCBSVN      [16]byte
	MRSEAM         [MeasurementLen]byte
	MRSignerSEAM   [MeasurementLen]byte
	SEAMAttributes [8]byte
	TDAttributes   [8]byte
	XFAM           [8]byte
	MRTD           [MeasurementLen]byte
	MRConfigID     [MeasurementLen]byte
	MROwner        [MeasurementLen]byte
	MROwnerConfig  [MeasurementLen]byte
	RTMR           [4][MeasurementLen]byte
	ReportData     [ReportDataLen]byte
	// TD 1.5 bodies only.
	TEETCBSVN2  [16]byte
	MRServiceTD [MeasurementLen]byte

	// Signature is the ECDSA P-256 signature (r ‖ s) of AttestationKey
	// (x ‖ y) over SignedData.
	Signature      [sigLen]byte
	AttestationKey [attKeyLen]byte
	// CertificationDataType and CertificationData are the quote's
	// certification data (type 6: the QE report certification data with
	// the PCK chain), kept for a DCAP verifier; not checked here.
	CertificationDataType uint16
	CertificationData     []byte

	signed []byte
}

// SignedData is the part of the quote the attestation key signs: the
// header and the body (with its descriptor in version 5).
func (q *Quote) SignedData() []byte { return q.signed }

// Debug reports whether the TD runs in debug mode (TDATTRIBUTES bit 0): the
// host can read and change a debug TD's memory, so its quote proves nothing
// about confidentiality.
func (q *Quote) Debug() bool { return q.TDAttributes[0]&1 != 0 }

// ParseQuote parses a TDX quote of version 4 or 5 with an ECDSA P-256
// attestation key. Bytes after the authentication data are ignored (as
// DCAP verifiers do); they are not signed.
func ParseQuote(b []byte) (*Quote, error) {
	if len(b) > MaxQuoteLen {
		return nil, malformed("quote has %d bytes, more than %d", len(b), MaxQuoteLen)
	}
	if len(b) < HeaderLen {
		return nil, malformed("quote has %d bytes, shorter than its %d-byte header", len(b), HeaderLen)
	}
	le16 := binary.LittleEndian.Uint16
	le32 := binary.LittleEndian.Uint32
	q := &Quote{
		Version:            le16(b[0:]),
		AttestationKeyType: le16(b[2:]),
		TEEType:            le32(b[4:]),
		QESVN:              le16(b[8:]),
		PCESVN:             le16(b[10:]),
	}
	copy(q.QEVendorID[:], b[12:28])
	copy(q.UserData[:], b[28:48])
	if q.TEEType != TEETypeTDX {
		return nil, malformed("TEE type is %#x, not TDX (%#x)", q.TEEType, TEETypeTDX)
	}
	if q.AttestationKeyType != AttKeyECDSAP256 {
		return nil, malformed("attestation key type %d is not ECDSA P-256 (%d)", q.AttestationKeyType, AttKeyECDSAP256)
	}
	off := HeaderLen
	var bodyLen int
	switch q.Version {
	case 4:
		q.BodyType, bodyLen = BodyTypeTD10, TDReport10Len
	case 5:
		if len(b) < off+BodyDescLen {
			return nil, malformed("version 5 quote ends before its body descriptor")
		}
		q.BodyType = le16(b[off:])
		size := le32(b[off+2:])
		off += BodyDescLen
		switch {
		case q.BodyType == BodyTypeTD10 && size == TDReport10Len:
			bodyLen = TDReport10Len
		case q.BodyType == BodyTypeTD15 && size == TDReport15Len:
			bodyLen = TDReport15Len
		default:
			return nil, malformed("body type %d of %d bytes is not a TD report", q.BodyType, size)
		}
	default:
		return nil, malformed("quote version %d is not 4 or 5", q.Version)
	}
	if len(b) < off+bodyLen {
		return nil, malformed("quote ends inside its TD report body")
	}
	body := b[off : off+bodyLen]
	p := 0
	take := func(dst []byte) { p += copy(dst, body[p:p+len(dst)]) }
	take(q.TEETCBSVN[:])
	take(q.MRSEAM[:])
	take(q.MRSignerSEAM[:])
	take(q.SEAMAttributes[:])
	take(q.TDAttributes[:])
	take(q.XFAM[:])
	take(q.MRTD[:])
	take(q.MRConfigID[:])
	take(q.MROwner[:])
	take(q.MROwnerConfig[:])
	for i := range q.RTMR {
		take(q.RTMR[i][:])
	}
	if p != reportDataOffset {
		panic("tdx: report body layout")
	}
	take(q.ReportData[:])
	if bodyLen == TDReport15Len {
		take(q.TEETCBSVN2[:])
		take(q.MRServiceTD[:])
	}
	off += bodyLen
	q.signed = append([]byte(nil), b[:off]...)

	if len(b) < off+4 {
		return nil, malformed("quote ends before its authentication data")
	}
	authLen := int(le32(b[off:]))
	off += 4
	if authLen > len(b)-off {
		return nil, malformed("authentication data of %d bytes overruns the quote", authLen)
	}
	auth := b[off : off+authLen]
	if len(auth) < sigLen+attKeyLen+6 {
		return nil, malformed("authentication data of %d bytes is too short", len(auth))
	}
	copy(q.Signature[:], auth[:sigLen])
	copy(q.AttestationKey[:], auth[sigLen:sigLen+attKeyLen])
	rest := auth[sigLen+attKeyLen:]
	q.CertificationDataType = le16(rest)
	certLen := int(le32(rest[2:]))
	if certLen > len(rest)-6 {
		return nil, malformed("certification data of %d bytes overruns the authentication data", certLen)
	}
	q.CertificationData = append([]byte(nil), rest[6:6+certLen]...)
	return q, nil
}

// ErrSignature reports a quote whose signature does not verify with its
// own attestation key.
var ErrSignature = errors.New("tdx: quote signature does not verify with the quote's attestation key")

// VerifySignature checks the ECDSA P-256 (SHA-256) signature over
// SignedData with the attestation key carried in the quote. This shows
// that header and body are intact as the key holder signed them; it does
// not show that the key is an Intel quoting enclave's (a DCAP verifier
// checks that with the QE report and the PCK chain).
func (q *Quote) VerifySignature() error {
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append([]byte{4}, q.AttestationKey[:]...))
	if err != nil {
		return fmt.Errorf("%w: attestation key is not a P-256 point", ErrSignature)
	}
	r := new(big.Int).SetBytes(q.Signature[:32])
	s := new(big.Int).SetBytes(q.Signature[32:])
	h := sha256.Sum256(q.signed)
	if !ecdsa.Verify(pub, h[:], r, s) {
		return ErrSignature
	}
	return nil
}
