package httpapi

import (
	"net/http"

	"github.com/veilhq/veil/httpapi/apikey"
)

// routeRule is what a route needs of a key, and the name its audit
// records carry.
type routeRule struct {
	scope  apikey.Scope
	action string
}

// routeRules is the one table of key scopes (docs/api.md, "Key scopes"),
// by "METHOD pattern". A route not in it needs read when it is a GET and
// full otherwise (defaultRule), so a new write route is never open to a
// read-only or chat key by accident. TestRouteRulesNameRoutes keeps every
// entry pointing at a route that exists.
var routeRules = map[string]routeRule{
	// chat: talking to an agent, and the conversation and inbox chores
	// that go with it. The tools a chat runs pass the money gate and the
	// owner's policy like any other caller's.
	"POST /agent/{id}/chat":                          {apikey.ScopeChat, "agent.chat"},
	"POST /agent/{id}/mcp":                           {apikey.ScopeChat, "agent.mcp"},
	"POST /agent/{id}/conversations":                 {apikey.ScopeChat, "conversation.create"},
	"DELETE /agent/{id}/conversations/{convId}":      {apikey.ScopeChat, "conversation.delete"},
	"POST /agent/{id}/notifications/read":            {apikey.ScopeChat, "notifications.read"},
	"DELETE /agent/{id}/notifications":               {apikey.ScopeChat, "notifications.delete"},
	"POST /agent/{id}/policy/preview":                {apikey.ScopeChat, "policy.preview"},
	"POST /agent/create":                             {apikey.ScopeFull, "agent.create"},
	"POST /agent/{id}/export":                        {apikey.ScopeFull, "agent.export"},
	"PUT /agent/{id}/policy":                         {apikey.ScopeFull, "policy.set"},
	"POST /agent/{id}/approvals/{approvalId}":        {apikey.ScopeFull, "approval.decide"},
	"POST /invoice/{invoiceId}/paid":                 {apikey.ScopeFull, "invoice.paid"},
	"POST /agent/{id}/schedules/{scheduleId}/pause":  {apikey.ScopeFull, "schedule.pause"},
	"POST /agent/{id}/schedules/{scheduleId}/resume": {apikey.ScopeFull, "schedule.resume"},
	"POST /agent/{id}/schedules/{scheduleId}/cancel": {apikey.ScopeFull, "schedule.cancel"},
	"POST /webhooks":                                 {apikey.ScopeFull, "webhook.create"},
	"DELETE /webhooks/{webhookId}":                   {apikey.ScopeFull, "webhook.delete"},
	"POST /webhooks/{webhookId}/test":                {apikey.ScopeFull, "webhook.test"},
	// admin: the account's keys and its audit trail.
	"GET /keys":                 {apikey.ScopeAdmin, "key.list"},
	"POST /keys":                {apikey.ScopeAdmin, "key.create"},
	"GET /keys/{keyId}":         {apikey.ScopeAdmin, "key.get"},
	"DELETE /keys/{keyId}":      {apikey.ScopeAdmin, "key.revoke"},
	"POST /keys/{keyId}/rotate": {apikey.ScopeAdmin, "key.rotate"},
	"GET /audit":                {apikey.ScopeAdmin, "audit.list"},
}

// ruleFor answers the rule of a route.
func ruleFor(method, pattern string) routeRule {
	if rule, ok := routeRules[method+" "+pattern]; ok {
		return rule
	}
	return defaultRule(method, pattern)
}

func defaultRule(method, pattern string) routeRule {
	if method == http.MethodGet || method == http.MethodHead {
		return routeRule{apikey.ScopeRead, "read"}
	}
	return routeRule{apikey.ScopeFull, method + " " + pattern}
}

// mutating reports a request that may change state: every method but
// GET, HEAD and OPTIONS. Each is audited.
func mutating(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}
