package builtin

// The result shapes of docs/tools.md read into sentences: balances, names,
// the agent, privacy, schedules and list lines, and the JSON helpers.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/veilhq/veil/chains"
)

func describeBalance(r result) string {
	type row struct {
		chain string
		bal   map[string]any
	}
	var rows []row
	d := obj(r.detail)
	switch {
	case d == nil:
		if items := list(r.detail); len(items) > 0 {
			for _, it := range items {
				m := obj(it)
				rows = append(rows, row{str(m, "chain"), m})
			}
		}
	case d["native"] != nil || d["tokens"] != nil:
		rows = append(rows, row{firstNonEmpty(str(d, "chain"), argStr(r, "chain")), d})
	default:
		inner := d
		if b := obj(d["balances"]); b != nil {
			inner = b
		}
		for _, ch := range chains.Order() {
			if m := obj(inner[string(ch)]); m != nil {
				rows = append(rows, row{string(ch), m})
			}
		}
		if items := list(d["balances"]); len(items) > 0 {
			for _, it := range items {
				m := obj(it)
				rows = append(rows, row{str(m, "chain"), m})
			}
		}
	}
	if len(rows) == 0 {
		if u := unavailableText(d); u != "" {
			return strings.TrimSpace(u)
		}
		return "Your balance:" + flat(r.detail)
	}
	var way []string
	for _, rw := range rows {
		way = append(way, onTheirWay(rw.chain, rw.bal)...)
	}
	wayText := ""
	if len(way) > 0 {
		wayText = "\nOn its way, not confirmed yet (you will be told when it settles):\n- " + strings.Join(way, "\n- ")
	}
	if len(rows) == 1 {
		return fmt.Sprintf("Your balance%s: %s.", onChain(rows[0].chain), holdings(rows[0].chain, rows[0].bal)) + wayText + unavailableText(d)
	}
	var b strings.Builder
	b.WriteString("Your balances:")
	for _, rw := range rows {
		fmt.Fprintf(&b, "\n- %s: %s", orDefault(rw.chain, "?"), holdings(rw.chain, rw.bal))
	}
	return b.String() + wayText + unavailableText(d)
}

// onTheirWay renders a balance's pendingOutgoing (get_balance: the
// payments still on their way) as "0.003 ETH to bob.veil on base
// (pending, payment 0190…)" each.
func onTheirWay(chain string, m map[string]any) []string {
	var out []string
	for _, it := range list(m["pendingOutgoing"]) {
		p := obj(it)
		line := fmt.Sprintf("%s to %s%s (%s", money(str(p, "amount"), str(p, "asset")), orDefault(str(p, "recipient"), "?"), onChain(chain), orDefault(str(p, "status"), "pending"))
		if id := str(p, "paymentId"); id != "" {
			line += ", payment " + id
		}
		if tx := str(p, "txHash"); tx != "" {
			line += ", transaction " + tx
		}
		out = append(out, line+")")
	}
	return out
}

// holdings renders {native, tokens} as "1.5 ETH, 100 USDC".
func holdings(chain string, m map[string]any) string {
	var parts []string
	if n := str(m, "native"); n != "" {
		sym := str(m, "nativeAsset", "symbol", "asset")
		if sym == "" && chain != "" {
			if id, err := chains.Parse(chain); err == nil {
				sym = id.NativeAsset()
			}
		}
		parts = append(parts, balanceMoney(n, orDefault(sym, "(native)")))
	}
	parts = append(parts, moneyByAsset(obj(m["tokens"]))...)
	out := "nothing yet"
	if len(parts) > 0 {
		out = strings.Join(parts, ", ")
	}
	// Received stealth payments not yet withdrawn.
	if sp := moneyByAsset(obj(m["stealth"])); len(sp) > 0 {
		n, _ := count(m, "stealthPayments")
		out += fmt.Sprintf(", plus %s received privately", strings.Join(sp, ", "))
		if n > 0 {
			out += fmt.Sprintf(" in %s not yet withdrawn", plural(n, "payment"))
		}
	}
	return out
}

// moneyByAsset renders {asset: amount} as "100 USDC" each, by asset.
func moneyByAsset(m map[string]any) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, balanceMoney(scalar(m[k]), k))
	}
	return out
}

// unavailableText: "\nI couldn't reach solana: …" for chains a result
// lists as unavailable.
func unavailableText(d map[string]any) string {
	var b strings.Builder
	for _, u := range list(d["unavailable"]) {
		m := obj(u)
		fmt.Fprintf(&b, "\nI couldn't reach %s right now: %s.", orDefault(str(m, "chain"), "a chain"), strings.TrimRight(cleanErr(str(m, "error")), "."))
	}
	return b.String()
}

func describeName(r result, d map[string]any) string {
	name := firstNonEmpty(str(d, "fullName"), argStr(r, "name"), str(d, "name"))
	if !strings.HasSuffix(name, chains.NameSuffix) && name != "" && !addressLike(name) {
		name += chains.NameSuffix
	}
	if s, ok := r.detail.(string); ok {
		return fmt.Sprintf("%s resolves to %s.", name, s)
	}
	metas := obj(d["metaAddresses"])
	if len(metas) == 0 {
		if m := str(d, "metaAddress", "meta_address", "address"); m != "" {
			ch := str(d, "chain")
			return fmt.Sprintf("%s is a Veil agent%s. Its stealth meta-address: %s", name, onChain(ch), m)
		}
		return fmt.Sprintf("%s:%s", name, flat(r.detail))
	}
	var chs []string
	var lines strings.Builder
	for _, ch := range chains.Order() {
		if m := str(metas, string(ch)); m != "" {
			chs = append(chs, string(ch))
			fmt.Fprintf(&lines, "\n- %s: %s", ch, m)
		}
	}
	return fmt.Sprintf("%s is a Veil agent on %s. Payments to it go to these stealth meta-addresses:%s", name, joinAnd(chs), lines.String())
}

func describeAgent(d map[string]any) string {
	name := str(d, "fullName", "name")
	if name != "" && !strings.HasSuffix(name, chains.NameSuffix) {
		name += chains.NameSuffix
	}
	s := "You are " + orDefault(name, "this agent")
	if id := str(d, "id"); id != "" {
		s += " (agent id " + id + ")"
	}
	addrs, metas := obj(d["addresses"]), obj(d["metaAddresses"])
	var chs []string
	var lines strings.Builder
	for _, ch := range chains.Order() {
		a, m := str(addrs, string(ch)), str(metas, string(ch))
		if a == "" && m == "" {
			continue
		}
		chs = append(chs, string(ch))
		fmt.Fprintf(&lines, "\n- %s: address %s", ch, orDefault(a, "—"))
		if m != "" {
			fmt.Fprintf(&lines, ", stealth meta-address %s", m)
		}
	}
	if len(chs) == 0 {
		if ch := str(d, "chain"); ch != "" {
			s += ", on " + ch
		}
		if a := str(d, "address"); a != "" {
			s += ". Address: " + a
		}
		if m := str(d, "metaAddress"); m != "" {
			s += ". Stealth meta-address: " + m
		}
		return s + "."
	}
	return s + ", on " + joinAnd(chs) + "." + lines.String()
}

func describePrivacy(detail any) string {
	d := obj(detail)
	if d == nil {
		return "Privacy check:" + flat(detail)
	}
	s := "Privacy check"
	if lvl := str(d, "level", "rating", "grade", "status"); lvl != "" {
		s += ": " + map[string]string{
			"good":    "good, nothing links your payments to you",
			"fair":    "fair, your public address holds funds, so payments sent from it are attributable to you",
			"at_risk": "at risk, some of your payments are linked",
		}[lvl]
		if strings.HasSuffix(s, ": ") {
			s += strings.ReplaceAll(lvl, "_", " ")
		}
	}
	if score := str(d, "score"); score != "" {
		s += " (score " + score + ")"
	}
	s += "."
	un, okU := count(d, "unwithdrawnPayments")
	wd, okW := count(d, "withdrawnPayments")
	if okU || okW {
		s += fmt.Sprintf(" Received payments: %d not yet withdrawn, %d withdrawn.", un, wd)
	}
	if sum := str(d, "summary"); sum != "" {
		s += " " + sum
	}
	line := func(v any) string {
		if m := obj(v); m != nil {
			return firstNonEmpty(str(m, "message", "description", "text", "title", "name"), strings.TrimPrefix(flat(v), " "))
		}
		return scalar(v)
	}
	for _, sec := range []struct{ key, title string }{
		{"advice", "Advice"}, {"issues", "Issues"}, {"warnings", "Warnings"},
		{"recommendations", "Suggestions"}, {"tips", "Suggestions"}, {"suggestions", "Suggestions"},
	} {
		if items := list(d[sec.key]); len(items) > 0 {
			s += "\n" + sec.title + ":" + itemLines(items, line)
		}
	}
	return s + unavailableText(d)
}

// scheduleText: "5 ZEN to carol every week (until 2027-03-01), next run
// 2026-11-29, id 3f2a…".
func scheduleText(d map[string]any, args map[string]any) string {
	get := func(k, ak string) string {
		if v := str(d, k); v != "" {
			return v
		}
		if args != nil {
			return scalar(args[ak])
		}
		return ""
	}
	iv := get("interval", "interval")
	every := ""
	if iv != "" {
		every = everyText(iv) // "every monday", "every 6 hours", never the raw "monday" or "every-6-hours"
	}
	s := fmt.Sprintf("%s to %s %s", money(get("amount", "amount"), get("asset", "asset")), get("recipient", "recipient"), every)
	if end := dateOnly(get("endDate", "end_date")); end != "" {
		s += " until " + end
	}
	if st := str(d, "status"); st != "" && st != "active" {
		s += " (" + st + ")"
	}
	if next := dateOnly(str(d, "nextRun")); next != "" && str(d, "status") != "cancelled" {
		s += ", next run " + next
	}
	if id := str(d, "id"); id != "" {
		s += ", id " + shortID(id)
	}
	return strings.Join(strings.Fields(s), " ")
}

func paymentLine(v any) string {
	m := obj(v)
	s := money(str(m, "amount", "balance"), str(m, "asset")) + onChain(str(m, "chain"))
	if a := str(m, "stealthAddress"); a != "" {
		s += " at stealth address " + a
	}
	if tx := str(m, "txHash"); tx != "" {
		s += " (tx " + tx + ")"
	}
	return s
}

func invoiceLine(v any) string {
	m := obj(v)
	s := money(str(m, "amount"), str(m, "asset"))
	if memo := str(m, "memo"); memo != "" {
		s += " for “" + memo + "”"
	}
	status := orDefault(str(m, "status"), "pending")
	if str(m, "cancelledAt") != "" && status != "paid" {
		return s + ": cancelled"
	}
	s += ": " + status
	if strings.EqualFold(str(m, "status"), "paid") {
		if tx := str(m, "txHash"); tx != "" {
			s += " (tx " + tx + ")"
		}
	} else if link := str(m, "paymentLink"); link != "" {
		s += " — " + link
	}
	return s
}

func withdrawalLine(v any) string {
	m := obj(v)
	if m == nil {
		return scalar(v)
	}
	s := strings.TrimSpace(money(str(m, "amount"), str(m, "asset")) + onChain(str(m, "chain")))
	if from := str(m, "from", "stealthAddress"); from != "" {
		s += " from " + from
	}
	if tx := strings.TrimSpace(txText(m)); tx != "" {
		s += " — " + tx
	}
	return strings.TrimPrefix(strings.TrimSpace(s), "— ")
}

const maxItems = 10

func itemLines(items []any, line func(any) string) string {
	var b strings.Builder
	for i, it := range items {
		if i == maxItems {
			fmt.Fprintf(&b, "\n- …and %d more", len(items)-maxItems)
			break
		}
		b.WriteString("\n- " + line(it))
	}
	return b.String()
}

// txText: " Transaction 0x…: https://…" from txHash/txLink.
func txText(d map[string]any) string {
	hash, link := str(d, "txHash", "tx_hash", "hash"), str(d, "txLink", "tx_link", "link", "explorer")
	switch {
	case hash != "" && link != "":
		return fmt.Sprintf(" Transaction %s: %s", hash, link)
	case hash != "":
		return fmt.Sprintf(" Transaction %s.", hash)
	case link != "":
		return " Transaction: " + link
	}
	return ""
}

func money(amount, asset string) string {
	amount, asset = strings.TrimSpace(amount), strings.TrimSpace(asset)
	switch {
	case amount == "" && asset == "":
		return "the amount"
	case amount == "":
		return asset
	case asset == "":
		return amount
	}
	return amount + " " + asset
}

// balanceMoney is a balance as people read it: whole units cut to a few
// decimals, with the symbol ("9.999949 ETH", not 18 decimals of wei).
func balanceMoney(amount, asset string) string {
	if strings.TrimSpace(amount) == "" {
		return money(amount, asset)
	}
	return chains.DisplayAmount(amount, strings.TrimSpace(asset))
}

func onChain(ch string) string {
	if ch == "" || ch == "all" {
		if ch == "all" {
			return " on all your chains"
		}
		return ""
	}
	return " on " + ch
}

func nameSp(n string) string {
	if n == "" {
		return ""
	}
	if !strings.HasSuffix(n, chains.NameSuffix) {
		n += chains.NameSuffix
	}
	return n + " "
}

// shortID shows a UUID by its first 8 characters: a unique prefix is
// enough to manage a schedule ("pause schedule 3f2a9c01").
func shortID(id string) string {
	if len(id) > 13 {
		return id[:8]
	}
	return id
}

func dateOnly(s string) string {
	if len(s) >= 10 && s[4] == '-' && s[7] == '-' {
		return s[:10]
	}
	return s
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// list finds an array: v itself, or v[key] for the first key that holds one.
func list(v any, keys ...string) []any {
	if a, ok := v.([]any); ok {
		return a
	}
	m := obj(v)
	for _, k := range keys {
		if a, ok := m[k].([]any); ok {
			return a
		}
	}
	return nil
}

func count(d map[string]any, keys ...string) (int, bool) {
	for _, k := range keys {
		if f, ok := d[k].(float64); ok {
			return int(f), true
		}
	}
	return 0, false
}

// scalar renders a JSON scalar.
func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// str is the first non-empty scalar among m's keys.
func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		switch m[k].(type) {
		case string, float64, bool:
			if s := scalar(m[k]); s != "" {
				return s
			}
		}
	}
	return ""
}

func argStr(r result, key string) string {
	if r.args == nil {
		return ""
	}
	return scalar(r.args[key])
}

// flat renders an unknown result compactly: " key: value; …".
func flat(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case map[string]any:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(x)) {
			val := scalar(x[k])
			if r := []rune(val); len(r) > 120 {
				val = string(r[:120]) + "…"
			}
			parts = append(parts, k+": "+val)
			if len(parts) == 12 {
				break
			}
		}
		return " " + strings.Join(parts, "; ")
	default:
		s := scalar(v)
		if r := []rune(s); len(r) > 400 {
			s = string(r[:400]) + "…"
		}
		return " " + s
	}
}
