package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/httpapi"
)

// oasDoc is the embedded OpenAPI document, decoded.
type oasDoc struct {
	raw   map[string]any
	paths map[string]map[string]any // path template -> method (lower case) -> operation
}

func loadOpenAPI(t *testing.T) *oasDoc {
	t.Helper()
	raw := httpapi.OpenAPI()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v, want 3.1.0", doc["openapi"])
	}
	d := &oasDoc{raw: doc, paths: map[string]map[string]any{}}
	for p, item := range doc["paths"].(map[string]any) {
		ops := map[string]any{}
		for m, op := range item.(map[string]any) {
			ops[m] = op
		}
		d.paths[p] = ops
	}
	return d
}

var paramRE = regexp.MustCompile(`\{[^}/]+\}`)

// shape replaces path parameters by {} so that chi's and the document's
// names need not agree.
func shape(p string) string { return paramRE.ReplaceAllString(p, "{}") }

// pointer resolves a local "#/a/b" reference.
func (d *oasDoc) pointer(t *testing.T, ref string) any {
	t.Helper()
	if !strings.HasPrefix(ref, "#/") {
		t.Fatalf("non-local $ref %q", ref)
	}
	var cur any = d.raw
	for _, part := range strings.Split(ref[2:], "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("$ref %q: %q is not inside an object", ref, part)
		}
		if cur, ok = m[part]; !ok {
			t.Fatalf("$ref %q does not resolve (at %q)", ref, part)
		}
	}
	return cur
}

// deref follows $ref until a non-reference object.
func (d *oasDoc) deref(t *testing.T, v any) map[string]any {
	t.Helper()
	for i := 0; i < 8; i++ {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("not an object: %v", v)
		}
		r, ok := m["$ref"].(string)
		if !ok || len(m) != 1 {
			return m
		}
		v = d.pointer(t, r)
	}
	t.Fatal("$ref chain too long")
	return nil
}

// TestOpenAPIDocumentsEveryRoute walks the router: a route added without
// documenting it in openapi.json fails here.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	d := loadOpenAPI(t)
	documented := map[string]bool{}
	for p, ops := range d.paths {
		for m := range ops {
			documented[strings.ToUpper(m)+" "+shape(p)] = true
		}
	}
	api := httpapi.New(httpapi.Config{})
	var routes, missing []string
	err := chi.Walk(api.Routes(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		route = strings.TrimSuffix(route, "/")
		if route == "" {
			route = "/"
		}
		routes = append(routes, method+" "+route)
		key := method + " " + shape(route)
		if strings.HasSuffix(route, "/*") {
			// A mounted sub-router: some documented path must lie below it.
			prefix := method + " " + shape(strings.TrimSuffix(route, "*"))
			for k := range documented {
				if strings.HasPrefix(k, prefix) {
					return nil
				}
			}
			missing = append(missing, method+" "+route)
			return nil
		}
		if !documented[key] {
			missing = append(missing, method+" "+route)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) < 10 {
		t.Fatalf("walked only %d routes: %v", len(routes), routes)
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("routes missing from httpapi/openapi.json (document them, with their schemas and errors):\n  %s", strings.Join(missing, "\n  "))
	}
	t.Logf("%d routes, all documented", len(routes))
}

// TestOpenAPIDocumentIsConsistent checks what a generator or reader relies
// on: references resolve, operation ids are unique, path parameters are
// declared, authenticated operations document 401, every component schema
// compiles as JSON Schema 2020-12 (OpenAPI 3.1's dialect).
func TestOpenAPIDocumentIsConsistent(t *testing.T) {
	d := loadOpenAPI(t)
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if r, ok := x["$ref"].(string); ok {
				d.pointer(t, r)
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(d.raw)

	ids := map[string]string{}
	for p, ops := range d.paths {
		for m, o := range ops {
			op := o.(map[string]any)
			where := strings.ToUpper(m) + " " + p
			id, _ := op["operationId"].(string)
			if id == "" || ids[id] != "" {
				t.Errorf("%s: operationId %q missing or also used by %s", where, id, ids[id])
			}
			ids[id] = where
			declared := map[string]bool{}
			for _, prm := range op["parameters"].([]any) {
				pm := d.deref(t, prm)
				if pm["in"] == "path" {
					declared[pm["name"].(string)] = true
				}
			}
			for _, name := range paramRE.FindAllString(p, -1) {
				if !declared[strings.Trim(name, "{}")] {
					t.Errorf("%s: path parameter %s not declared", where, name)
				}
			}
			resps := op["responses"].(map[string]any)
			public := false
			if sec, ok := op["security"].([]any); ok && len(sec) == 0 {
				public = true
			}
			if _, ok := resps["401"]; !ok && !public {
				t.Errorf("%s: authenticated but no 401", where)
			}
			for code, r := range resps {
				if d.deref(t, r)["description"] == "" {
					t.Errorf("%s %s: no description", where, code)
				}
			}
		}
	}
	c := newCompiler(t, d)
	for name := range d.raw["components"].(map[string]any)["schemas"].(map[string]any) {
		if _, err := c.Compile(docURL + "#/components/schemas/" + name); err != nil {
			t.Errorf("schema %s: %v", name, err)
		}
	}
}

const docURL = "https://veil.test/openapi.json"

func newCompiler(t *testing.T, d *oasDoc) *jsonschema.Compiler {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(httpapi.OpenAPI()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource(docURL, doc); err != nil {
		t.Fatal(err)
	}
	return c
}

// validator checks real answers against the document.
type validator struct {
	t       *testing.T
	d       *oasDoc
	c       *jsonschema.Compiler
	schemas map[string]*jsonschema.Schema
	n       int
	seen    map[string]bool // "METHOD template status" validated
}

func newValidator(t *testing.T) *validator {
	d := loadOpenAPI(t)
	return &validator{t: t, d: d, c: newCompiler(t, d), schemas: map[string]*jsonschema.Schema{}, seen: map[string]bool{}}
}

// absolute rewrites local references to point into the document.
func absolute(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if s, ok := e.(string); ok && k == "$ref" && strings.HasPrefix(s, "#") {
				out[k] = docURL + s
				continue
			}
			out[k] = absolute(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = absolute(e)
		}
		return out
	}
	return v
}

func (v *validator) schema(key string, s any) *jsonschema.Schema {
	v.t.Helper()
	if sch, ok := v.schemas[key]; ok {
		return sch
	}
	u := "https://veil.test/responses/" + strconv.Itoa(len(v.schemas)) + ".json"
	if err := v.c.AddResource(u, absolute(s)); err != nil {
		v.t.Fatal(err)
	}
	sch, err := v.c.Compile(u)
	if err != nil {
		v.t.Fatalf("%s: %v", key, err)
	}
	v.schemas[key] = sch
	return sch
}

// operation finds the documented operation of a concrete request path;
// templates with more literal segments win.
func (v *validator) operation(method, path string) (string, map[string]any) {
	best, bestLit := "", -1
	var bestOp map[string]any
	segs := strings.Split(path, "/")
	for tmpl, ops := range v.d.paths {
		op, ok := ops[strings.ToLower(method)]
		if !ok {
			continue
		}
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		lit, match := 0, true
		for i := range ts {
			if paramRE.MatchString(ts[i]) && segs[i] != "" {
				continue
			}
			if ts[i] != segs[i] {
				match = false
				break
			}
			lit++
		}
		if match && lit > bestLit {
			best, bestLit, bestOp = tmpl, lit, op.(map[string]any)
		}
	}
	return best, bestOp
}

// check validates one answer: its status is documented for the operation,
// and a JSON body matches the documented schema. Answers of no operation
// (the router's 404/405) must be the spec's error body.
func (v *validator) check(method, path string, r response) {
	v.t.Helper()
	v.n++
	path, _, _ = strings.Cut(path, "?")
	tmpl, op := v.operation(method, path)
	var schema any
	var key string
	if op != nil && r.status == http.StatusNotFound && bytes.Contains(r.body, []byte(`"no such endpoint`)) {
		// Documented ahead of the router (a later issue mounts it).
		v.t.Logf("%s %s is documented but not routed yet", method, tmpl)
		op = nil
	}
	if op == nil {
		if r.status < 400 {
			v.t.Fatalf("%s %s answered %d but is not in the document", method, path, r.status)
		}
		schema, key = map[string]any{"$ref": "#/components/schemas/Error"}, "Error"
	} else {
		resps := op["responses"].(map[string]any)
		ro, ok := resps[strconv.Itoa(r.status)]
		if !ok {
			v.t.Fatalf("%s %s (%s) answered %d, which the document does not list (%v): %s", method, path, tmpl, r.status, sortedKeys(resps), r.body)
		}
		resp := v.d.deref(v.t, ro)
		content, _ := resp["content"].(map[string]any)
		key = method + " " + tmpl + " " + strconv.Itoa(r.status)
		v.seen[key] = true
		if content == nil {
			if len(bytes.TrimSpace(r.body)) != 0 {
				v.t.Fatalf("%s: documented without a body, got %s", key, r.body)
			}
			return
		}
		mt, ok := content["application/json"].(map[string]any)
		if ct := r.header.Get("Content-Type"); ok && !strings.HasPrefix(ct, "application/json") {
			// Another documented form of the same answer (the pay page:
			// HTML, or JSON when asked for).
			for other := range content {
				if other != "application/json" && strings.HasPrefix(ct, other) {
					return
				}
			}
		}
		if !ok {
			for ct := range content {
				if !strings.HasPrefix(r.header.Get("Content-Type"), ct) {
					v.t.Fatalf("%s: Content-Type %q, documented %q", key, r.header.Get("Content-Type"), ct)
				}
			}
			return
		}
		schema = mt["schema"]
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		v.t.Fatalf("%s %s: Content-Type %q, want application/json", method, path, ct)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.body))
	if err != nil {
		v.t.Fatalf("%s %s: body is not JSON: %v: %s", method, path, err, r.body)
	}
	if err := v.schema(key, schema).Validate(inst); err != nil {
		v.t.Fatalf("%s %s (%d) does not match the document:\n%v\nbody: %s", method, path, r.status, err, r.body)
	}
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestOpenAPIResponsesValidate sends real requests to every endpoint, on
// success and error paths, and validates each answer against the document.
func TestOpenAPIResponsesValidate(t *testing.T) {
	e := newEnv(t, envOptions{evm: true})
	v := newValidator(t)
	do := func(method, path, key string, body any, headers ...string) response {
		t.Helper()
		r := e.doHeaders(method, path, key, body, headers...)
		v.check(method, path, r)
		return r
	}

	do("GET", "/health", "", nil)
	do("GET", "/readyz", "", nil)
	do("GET", "/agents", "", nil)
	do("GET", "/agents", "nonsense", nil)
	do("GET", "/no/such/thing", e.key, nil)
	do("PUT", "/agents", e.key, nil)

	// Agents.
	owner, _ := crypto.GenerateKey()
	wallet := walletsig.EVMAddress(&owner.PublicKey)
	msg := walletsig.CreateMessage("oas-agent", "ethereum", wallet, time.Now())
	create := map[string]string{"name": "oas-agent", "chain": "ethereum", "wallet": wallet, "signature": walletsig.SignEVM(owner, msg), "message": msg}
	r := do("POST", "/agent/create", e.key, create)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var created struct{ ID string }
	r.decode(t, &created)
	id := created.ID
	do("POST", "/agent/create", e.key, create) // replayed or taken
	msg2 := walletsig.CreateMessage("oas-agent", "ethereum", wallet, time.Now().Add(time.Second))
	if r := do("POST", "/agent/create", e.key, map[string]string{"name": "oas-agent", "chain": "ethereum", "wallet": wallet, "signature": walletsig.SignEVM(owner, msg2), "message": msg2}); r.status != 409 {
		t.Fatalf("taken name: %d %s", r.status, r.body)
	}
	do("POST", "/agent/create", e.key, map[string]string{"name": "Bad Name", "chain": "base", "wallet": wallet, "signature": "0x"})
	do("POST", "/agent/create", e.key, "{not json")
	do("POST", "/agent/create", e.key, strings.Repeat(" ", httpapi.DefaultMaxBody+10))
	do("GET", "/agents", e.key, nil)
	do("GET", "/agent/"+id, e.key, nil)
	do("GET", "/agent/"+uuid.NewString(), e.key, nil)
	do("GET", "/agent/info/oas-agent.veil", e.key, nil)
	do("GET", "/agent/info/NOPE", e.key, nil)
	do("GET", "/agent/info/nobody", e.key, nil)
	do("GET", "/agent/wallet/"+wallet, e.key, nil)
	do("GET", "/agent/wallet/zzz", e.key, nil)
	do("GET", "/agent/"+id+"/status", e.key, nil)
	emsg := walletsig.ExportMessage(id, wallet, time.Now())
	export := map[string]string{"signature": walletsig.SignEVM(owner, emsg), "message": emsg}
	if r := do("POST", "/agent/"+id+"/export", e.key, export); r.status != 200 {
		t.Fatalf("export: %d %s", r.status, r.body)
	}
	do("POST", "/agent/"+id+"/export", e.key, export)

	// Chat, conversations, invoices.
	r = do("POST", "/agent/"+id+"/chat", e.key, map[string]string{"message": "what's my balance?"}, "Idempotency-Key", uuid.NewString())
	var reply struct {
		ConversationID string `json:"conversationId"`
	}
	if r.status == 200 {
		r.decode(t, &reply)
	}
	r = do("POST", "/agent/"+id+"/chat", e.key, map[string]string{"message": "create an invoice for 5 USDC for the schema test", "conversationId": reply.ConversationID})
	invoiceID := uuid.NewString()
	if r.status == 200 {
		var rp struct {
			ToolCalls []struct{ Name, Status, Detail string } `json:"toolCalls"`
		}
		r.decode(t, &rp)
		for _, tc := range rp.ToolCalls {
			var det struct{ ID string }
			if tc.Name == "create_invoice" && json.Unmarshal([]byte(tc.Detail), &det) == nil && det.ID != "" {
				invoiceID = det.ID
			}
		}
	}
	do("POST", "/agent/"+id+"/chat", e.key, map[string]string{"message": "hi", "conversationId": uuid.NewString()})
	do("POST", "/agent/"+id+"/chat", e.key, map[string]string{"message": ""})
	do("POST", "/agent/"+id+"/chat", e.key, map[string]string{"message": "hi"}, "X-AI-Provider", "nonsense")
	do("POST", "/agent/"+uuid.NewString()+"/chat", e.key, map[string]string{"message": "hi"})
	do("GET", "/invoice/"+invoiceID, e.key, nil)
	do("GET", "/invoice/"+uuid.NewString(), e.key, nil)
	do("GET", "/agent/"+id+"/invoices", e.key, nil)
	do("GET", "/agent/"+id+"/invoices?status=paid&since=2026-01-01&limit=1", e.key, nil)
	do("GET", "/agent/"+id+"/invoices?limit=1000", e.key, nil)
	do("GET", "/agent/"+uuid.NewString()+"/invoices", e.key, nil)
	do("GET", "/agent/"+id+"/payments", e.key, nil)
	do("GET", "/agent/"+id+"/payments?status=pending&chain=ethereum&limit=2", e.key, nil)
	do("GET", "/agent/"+id+"/payments?chain=mars", e.key, nil)
	do("GET", "/agent/"+id+"/payments/"+uuid.NewString(), e.key, nil)
	do("GET", "/agent/"+id+"/payments/received", e.key, nil)
	do("GET", "/agent/"+id+"/payments/received?status=held&chain=ethereum&limit=2", e.key, nil)
	do("GET", "/agent/"+id+"/payments/received?cursor=nope", e.key, nil)
	do("POST", "/invoice/"+invoiceID+"/paid", e.key, nil)
	do("POST", "/invoice/"+uuid.NewString()+"/paid", e.key, map[string]string{"txHash": "0x" + strings.Repeat("ab", 32)})

	r = do("POST", "/agent/"+id+"/conversations", e.key, nil)
	var conv struct{ ID string }
	r.decode(t, &conv)
	do("GET", "/agent/"+id+"/conversations", e.key, nil)
	if reply.ConversationID != "" {
		do("GET", "/agent/"+id+"/conversations/"+reply.ConversationID+"/messages", e.key, nil)
	}
	do("GET", "/agent/"+id+"/conversations/"+conv.ID+"/messages", e.key, nil)
	do("DELETE", "/agent/"+id+"/conversations/"+conv.ID, e.key, nil)
	do("DELETE", "/agent/"+id+"/conversations/"+conv.ID, e.key, nil)
	do("GET", "/agent/"+uuid.NewString()+"/conversations", e.key, nil)

	// Notifications, schedules, TEE.
	do("GET", "/agent/"+id+"/notifications", e.key, nil)
	do("POST", "/agent/"+id+"/notifications/read", e.key, nil)
	do("GET", "/agent/"+id+"/notifications", e.key, nil)
	do("DELETE", "/agent/"+id+"/notifications", e.key, nil)
	do("GET", "/agent/"+uuid.NewString()+"/notifications", e.key, nil)
	do("GET", "/agent/"+id+"/schedules", e.key, nil)
	do("POST", "/agent/"+id+"/schedules/"+uuid.NewString()+"/pause", e.key, nil)
	do("GET", "/tee/info", e.key, nil)
	do("GET", "/tee/attest/"+id+"?nonce=schema-test", e.key, nil)
	do("GET", "/tee/attest/"+id+"?nonce="+strings.Repeat("n", 200), e.key, nil)
	do("GET", "/tee/attest/"+uuid.NewString(), e.key, nil)
	do("GET", "/pay/"+invoiceID, "", nil)
	do("GET", "/pay/"+invoiceID, "", nil, "Accept", "application/json")
	do("GET", "/pay/"+uuid.NewString(), "", nil, "Accept", "application/json")
	do("GET", "/openapi.json", "", nil)

	seen := make([]string, 0, len(v.seen))
	for k := range v.seen {
		seen = append(seen, k)
	}
	sort.Strings(seen)
	t.Logf("%d answers validated; documented (operation, status) pairs seen:\n  %s", v.n, strings.Join(seen, "\n  "))
	if len(seen) < 30 {
		t.Fatalf("only %d documented (operation, status) pairs exercised", len(seen))
	}
}
