package agent

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/msg"
)

// Every registered message is authorized before its handler runs: a
// Scoped one for another account (or none) and any for an agent that does
// not exist answer the route's not-found error, and nothing runs (the
// actor here has no store: a handler that ran would panic).
func TestProtocolAuthorizesEveryMessage(t *testing.T) {
	owned := &Actor{deps: &Deps{}, id: "a1", rec: &Record{ID: "a1", AccountID: "acc"}}
	absent := &Actor{deps: &Deps{}, id: "a2"}
	for _, rt := range protocol() {
		typ := reflect.TypeOf(rt.msg)
		if rt.creates {
			continue
		}
		for _, tc := range []struct {
			name    string
			a       *Actor
			account string
		}{
			{"absent agent", absent, "acc"},
			{"another account", owned, "other"},
			{"no account", owned, ""},
		} {
			if tc.a == owned && !rt.scoped {
				continue // in-process messages carry no account
			}
			m := reflect.New(typ.Elem())
			if f := m.Elem().FieldByName("AccountID"); f.IsValid() {
				f.SetString(tc.account)
			} else if rt.scoped {
				t.Fatalf("%s is Scoped but has no AccountID", typ)
			}
			v, err := tc.a.Receive(context.Background(), m.Interface())
			if !errors.Is(err, rt.notFound) || v != nil {
				t.Errorf("%s, %s: Receive = %v, %v; want %v", typ, tc.name, v, err, rt.notFound)
			}
		}
	}
}

// Every message with an AccountID field is Scoped: a new message cannot
// skip the account check by forgetting its Account method.
func TestProtocolScopesEveryAccountMessage(t *testing.T) {
	for _, rt := range protocol() {
		typ := reflect.TypeOf(rt.msg)
		if _, has := typ.Elem().FieldByName("AccountID"); has && !rt.scoped && !rt.creates {
			t.Errorf("%s has an AccountID but is not Scoped", typ)
		}
	}
}

// The codec knows every message and answer of the protocol.
func TestProtocolIsOnTheWire(t *testing.T) {
	c := msg.NewCodec()
	RegisterWire(c)
	for _, rt := range protocol() {
		req, err := c.EncodeRequest("a1", reflect.New(reflect.TypeOf(rt.msg).Elem()).Interface(), time.Time{}, "")
		if err != nil {
			t.Errorf("%T: %v", rt.msg, err)
			continue
		}
		if _, err := c.DecodeRequest(req); err != nil {
			t.Errorf("%T: %v", rt.msg, err)
		}
		if rt.reply != nil {
			if _, err := c.DecodeReply(c.EncodeReply(rt.reply, nil)); err != nil {
				t.Errorf("answer %T of %T: %v", rt.reply, rt.msg, err)
			}
		}
	}
}
