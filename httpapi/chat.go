package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/llm"
)

// Headers of chat.
const (
	HeaderProvider       = "X-AI-Provider"
	HeaderProviderKey    = "X-AI-Key"
	HeaderIdempotencyKey = "Idempotency-Key"
)

func (s *Server) chat(w http.ResponseWriter, r *http.Request) error {
	var req ChatRequest
	to, acc, err := targetBody(r, &req)
	if err != nil {
		return err
	}
	// A hosted model may take longer than an ordinary reply may.
	extendWrite(w, s.bounds.ChatWriteTimeout)
	if strings.TrimSpace(req.Message) == "" {
		return Errorf(http.StatusBadRequest, "message is required: send the text for the agent")
	}
	if n := len([]rune(req.Message)); n > agent.MaxMessageRunes {
		return Errorf(http.StatusBadRequest, "message has %d characters; the limit is %d", n, agent.MaxMessageRunes)
	}
	if req.ConversationID != "" && !isUUID(req.ConversationID) {
		return Errorf(http.StatusNotFound, "conversation not found")
	}
	provider, err := llm.ParseProvider(r.Header.Get(HeaderProvider))
	if err != nil {
		return chatError(err)
	}
	idem := r.Header.Get(HeaderIdempotencyKey)
	if len(idem) > 255 {
		return Errorf(http.StatusBadRequest, "Idempotency-Key is too long: at most 255 characters")
	}
	m := &agent.Chat{
		AccountID:      acc,
		ConversationID: req.ConversationID,
		Message:        req.Message,
		Provider:       string(provider),
		ProviderKey:    r.Header.Get(HeaderProviderKey),
		IdempotencyKey: idem,
		RequestID:      uuid.NewString(),
	}
	// The turn writes the request's audit record in the commit that
	// stores its answer: one commit per chat, not two (issue 38). A chat
	// that fails, or an agent of an earlier version (a cluster mid
	// upgrade), leaves it to the audit middleware as before.
	m.Audit, _ = chatAudit(r)
	v, err := ask(r.Context(), s, to, m)
	if err != nil {
		return chatError(err)
	}
	if v.Audited {
		auditWritten(r)
		v.Audited = false // not the spec's: ChatResponse has no such field
	} else {
		auditChat(r, v) // the tools it ran and the payments they made
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// chatError maps the model layer's errors: header problems are 400, a
// provider failure is 502 with llm's redacted text (never the key).
func chatError(err error) error {
	var re *llm.RequestError
	var pe *llm.ProviderError
	var me *agent.ModelError
	switch {
	case errors.Is(err, agent.ErrBadChat):
		return &Error{Status: http.StatusBadRequest, Message: strings.TrimPrefix(err.Error(), agent.ErrBadChat.Error()+": "), Err: err}
	case errors.As(err, &re):
		return &Error{Status: http.StatusBadRequest, Message: re.Error(), Err: err}
	case errors.As(err, &pe):
		return &Error{Status: http.StatusBadGateway, Message: pe.Error(), Err: err}
	case errors.As(err, &me):
		return &Error{Status: http.StatusBadGateway, Message: "the AI model provider failed; retry later or choose another provider", Err: err}
	}
	return err
}
