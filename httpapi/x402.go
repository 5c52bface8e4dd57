package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/chains/evm/x402"
)

// The invoice's x402 resource: GET /pay/<invoiceId>/x402, public like the
// pay page (the payer has no API key). Without a PAYMENT-SIGNATURE header
// it answers 402 with PAYMENT-REQUIRED: exactly the invoice's amount of its
// token, to its one-time stealth address. With one, the payee's agent
// verifies and settles the EIP-3009 authorization and the invoice flips to
// paid; the answer is 200 with PAYMENT-RESPONSE and the invoice's pay view.
// A payment that is refused gets 402 again (the requirement with its
// error) and moves nothing. docs/x402.md.

// x402Routes mounts the resource (outside authentication).
func (s *Server) x402Routes(r chi.Router) {
	r.Method(http.MethodGet, "/pay/{invoiceId}/x402", handler(s.payX402))
}

func (s *Server) payX402(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.invoiceOwner(r)
	if err != nil {
		return err
	}
	payment := r.Header.Get(x402.HeaderSignature)
	if len(payment) > x402.MaxHeader {
		payment = payment[:x402.MaxHeader+1] // decoded as too long: a 402, not a 431
	}
	ans, err := askMoney(r.Context(), s, rec.AgentID, &agent.X402Pay{InvoiceID: rec.ID, Payment: payment})
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Access-Control-Expose-Headers", x402.HeaderRequired+", "+x402.HeaderResponse)
	// setEncoded sets header to v in x402's encoding.
	setEncoded := func(header string, v any) error {
		enc, err := x402.Encode(v)
		if err == nil {
			h.Set(header, enc)
		}
		return err
	}
	switch ans.Outcome {
	case agent.X402Required, agent.X402Invalid:
		if err := setEncoded(x402.HeaderRequired, ans.Required); err != nil {
			return err
		}
		writeError(w, http.StatusPaymentRequired, ans.Message)
	case agent.X402Settled:
		if err := setEncoded(x402.HeaderResponse, ans.Settlement); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, ans.Invoice)
	case agent.X402Paid:
		writeJSON(w, http.StatusOK, ans.Invoice)
	default:
		writeError(w, http.StatusConflict, ans.Message)
	}
	return nil
}
