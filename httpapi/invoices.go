package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/enclave"
)

// InvoicePaidRequest is the optional body of POST /invoice/:id/paid.
type InvoicePaidRequest struct {
	TxHash string `json:"txHash"`
}

// maxTxHash bounds a transaction hash (EVM 66, Stellar 64, Solana ≤ 88).
const maxTxHash = 128

// moneyError maps the agent's invoice and schedule errors, then the rest
// as apiError does.
func moneyError(err error) error {
	switch {
	case errors.Is(err, agent.ErrInvoiceNotFound):
		return &Error{Status: http.StatusNotFound, Message: "invoice not found", Err: err}
	case errors.Is(err, agent.ErrNoPayment):
		return &Error{Status: http.StatusBadRequest, Message: strings.TrimPrefix(err.Error(), agent.ErrNoPayment.Error()+": "), Err: err}
	case errors.Is(err, agent.ErrInvoiceExpired):
		return &Error{Status: http.StatusConflict, Message: strings.TrimPrefix(err.Error(), agent.ErrInvoiceExpired.Error()+": "), Err: err}
	case errors.Is(err, agent.ErrInvoiceSettled):
		return &Error{Status: http.StatusConflict, Message: strings.TrimPrefix(err.Error(), agent.ErrInvoiceSettled.Error()+": "), Err: err}
	case errors.Is(err, agent.ErrScheduleNotFound):
		return &Error{Status: http.StatusNotFound, Message: "schedule not found", Err: err}
	case errors.Is(err, agent.ErrScheduleTransition):
		return &Error{Status: http.StatusConflict, Message: strings.TrimPrefix(err.Error(), agent.ErrScheduleTransition.Error()+": "), Err: err}
	case errors.Is(err, enclave.ErrPolicy):
		// Resuming a schedule the owner's policy refuses: nothing changed;
		// the message names the rule (the owner can sign a new policy).
		return &Error{Status: http.StatusConflict, Message: err.Error(), Err: err}
	}
	return apiError(err)
}

// invoiceOwner finds the agent of the {invoiceId} path parameter. A
// malformed or unknown id is a 404 without touching an actor.
func (s *Server) invoiceOwner(r *http.Request) (state.InvoiceRecord, error) {
	id, err := pathID(r, "invoiceId", "invoice")
	if err != nil {
		return state.InvoiceRecord{}, err
	}
	rec, err := state.GetInvoice(r.Context(), s.store, id)
	if errors.Is(err, state.ErrNotFound) {
		return rec, Errorf(http.StatusNotFound, "invoice not found")
	}
	return rec, err
}

// getInvoice is GET /invoice/:id: the spec's Invoice, for the owning
// account only (404 for anyone else's).
func (s *Server) getInvoice(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.invoiceOwner(r)
	if err != nil {
		return err
	}
	return written(w, http.StatusOK)(askMoney(r.Context(), s, rec.AgentID, &agent.GetInvoice{AccountID: accountID(r), InvoiceID: rec.ID}))
}

// invoicePaid is POST /invoice/:id/paid with an optional {txHash}: the
// payment is verified on chain before the invoice flips; repeating it
// answers the same invoice and raises no second notification.
func (s *Server) invoicePaid(w http.ResponseWriter, r *http.Request) error {
	rec, txHash, err := s.paidInvoice(r)
	if err != nil {
		return err
	}
	return written(w, http.StatusOK)(askMoney(r.Context(), s, rec.AgentID, &agent.ConfirmInvoicePaid{
		AccountID: accountID(r), InvoiceID: rec.ID, TxHash: txHash,
	}))
}

// paidInvoice reads the invoice of the {invoiceId} path parameter, then
// the transaction hash of the body (readTxHash).
func (s *Server) paidInvoice(r *http.Request) (state.InvoiceRecord, string, error) {
	rec, err := s.invoiceOwner(r)
	if err != nil {
		return rec, "", err
	}
	txHash, err := readTxHash(r)
	return rec, txHash, err
}

// readTxHash reads the optional {"txHash": "…"} body of POST
// /invoice/:id/paid and /pay/:id/paid ("" when there is no body).
func readTxHash(r *http.Request) (string, error) {
	var req InvoicePaidRequest
	raw, err := io.ReadAll(r.Body)
	limit, _ := bodyTimeout(r)
	if berr := bodyError(err, limit); berr != nil {
		return "", berr
	}
	if err != nil {
		return "", err
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(&req); err != nil {
			return "", Errorf(http.StatusBadRequest, "request body is not valid JSON for this endpoint: %s (send {\"txHash\": \"0x…\"})", jsonErrorText(err))
		}
		if dec.More() {
			return "", Errorf(http.StatusBadRequest, "request body has data after the JSON object")
		}
	}
	req.TxHash = strings.TrimSpace(req.TxHash)
	if len(req.TxHash) > maxTxHash || strings.ContainsAny(req.TxHash, " /\t\n") {
		return "", Errorf(http.StatusBadRequest, "txHash is not a transaction hash")
	}
	return req.TxHash, nil
}

// payPaid is the public POST /pay/:id/paid {txHash}: anyone who paid the
// invoice (a wallet, another Veil's agent) names the transaction, which is
// verified on chain as for POST /invoice/:id/paid; the answer is the pay
// page's JSON view. No API key: the proof is on chain (docs/invoices.md).
func (s *Server) payPaid(w http.ResponseWriter, r *http.Request) error {
	rec, txHash, err := s.paidInvoice(r)
	if err != nil {
		return err
	}
	if txHash == "" {
		return Errorf(http.StatusBadRequest, "txHash is required: send {\"txHash\": \"…\"}, the transaction that paid the invoice")
	}
	return private(w, http.StatusOK)(askMoney(r.Context(), s, rec.AgentID, &agent.ClaimInvoicePaid{InvoiceID: rec.ID, TxHash: txHash}))
}
