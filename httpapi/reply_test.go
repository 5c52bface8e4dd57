package httpapi

import (
	"errors"
	"strings"
	"testing"

	"github.com/veilhq/veil/actors/agent"
)

func TestReplyChecksTheAnswersType(t *testing.T) {
	boom := errors.New("boom")
	rec := &agent.Record{ID: "a"}
	for _, tc := range []struct {
		name    string
		v       any
		err     error
		wantErr string // "" = no error
	}{
		{name: "right type", v: rec},
		{name: "error passes through", v: nil, err: boom, wantErr: "boom"},
		{name: "wrong type", v: "secret", wantErr: "answered string where *agent.Record was expected"},
		{name: "nil answer", v: nil, wantErr: "answered <nil> where *agent.Record was expected"},
	} {
		got, err := reply[*agent.Record](tc.v, tc.err)
		switch {
		case tc.wantErr == "" && (err != nil || got != rec):
			t.Errorf("%s: reply = %v, %v", tc.name, got, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || got != nil):
			t.Errorf("%s: reply = %v, %v; want error %q", tc.name, got, err, tc.wantErr)
		}
	}
}
