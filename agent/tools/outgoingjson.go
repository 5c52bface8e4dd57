package tools

import (
	"encoding/json"
	"fmt"

	"github.com/veilhq/veil/chains"
)

// UnmarshalJSON reads a stored record (agent/state keeps them as JSON).
// It is the decode boundary of the record's chain (docs/tools.md, "Parse
// once"): a record is built in code from a typed chains.ID (a parsed
// PaymentRequest, a connector's spend), and read back from the store only
// through here, where its chain is parsed, the one place; a stored chain
// Veil does not know is refused with chains.ErrUnknownChain, so nothing
// after the decode parses it again (agent/state's Outgoing.validate does
// not). The encoding is the struct's own, so the bytes on disk, and what
// a member of the previous version reads, are unchanged.
func (p *OutgoingPayment) UnmarshalJSON(b []byte) error {
	type plain OutgoingPayment // the same fields, without this method
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	c, err := chains.Parse(string(v.Chain))
	if err != nil {
		return fmt.Errorf("payment record %s: %w", v.ID, err)
	}
	v.Chain = c
	*p = OutgoingPayment(v)
	return nil
}
