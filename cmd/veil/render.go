package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/veilhq/veil/client"
)

// ANSI styles; paint applies one only when colour is on.
const (
	bold  = "1"
	red   = "31"
	green = "32"
	cyan  = "36"
	dim   = "2"
)

// colour reports whether output to people is coloured: standard output is
// a terminal, NO_COLOR (https://no-color.org) is unset or empty, TERM is
// not "dumb", and --json is off.
func (a *app) colour() bool {
	return !a.g.json && a.getenv("NO_COLOR") == "" && a.getenv("TERM") != "dumb" && isTerminal(a.stdout)
}

func (a *app) paint(style, s string) string {
	if !a.colour() {
		return s
	}
	return "\033[" + style + "m" + s + "\033[0m"
}

// printReply prints the tools the agent ran, its answer and the links.
func (s *chatSession) printReply(resp *client.ChatResponse, prompt bool) {
	a := s.app
	w := a.stdout
	for _, tc := range resp.ToolCalls {
		fmt.Fprintln(w, a.toolLine(tc))
	}
	if prompt {
		fmt.Fprintf(w, "%s %s\n", a.paint(cyan, s.agent.Name+">"), resp.Response)
	} else {
		fmt.Fprintln(w, resp.Response)
	}
	for _, l := range resp.Links() {
		u := l.URL
		if strings.EqualFold(l.Kind, "txLink") {
			u = a.explorerLink(resp, u)
		}
		fmt.Fprintf(w, "  %-4s %s\n", linkLabel(l.Kind), u)
	}
}

func linkLabel(kind string) string {
	switch strings.ToLower(kind) {
	case "txlink":
		return "tx"
	case "paymentlink":
		return "pay"
	}
	return strings.TrimSuffix(strings.TrimSuffix(kind, "Link"), "link")
}

// toolLine is one line per tool call: mark, name and the short scalar
// members of its result (links are printed apart), or its error.
func (a *app) toolLine(tc client.ToolCall) string {
	if !tc.OK() {
		return fmt.Sprintf("  %s %s: %s", a.paint(red, "✗"), tc.Name, oneLine(chainErrorWords(tc.ErrorText()), 200))
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(tc.Detail), &m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// The spec's known members first, then the rest by name.
	rank := map[string]int{"txHash": 0, "id": 1, "count": 2, "amount": 3, "asset": 4, "status": 5}
	sort.Slice(keys, func(i, j int) bool {
		ri, oki := rank[keys[i]]
		rj, okj := rank[keys[j]]
		switch {
		case oki && okj:
			return ri < rj
		case oki != okj:
			return oki
		}
		return keys[i] < keys[j]
	})
	var parts []string
	for _, k := range keys {
		if strings.HasSuffix(strings.ToLower(k), "link") {
			continue
		}
		switch v := m[k].(type) {
		case string:
			if v != "" && len(v) <= 70 {
				parts = append(parts, k+" "+v)
			}
		case float64:
			parts = append(parts, fmt.Sprintf("%s %v", k, v))
		case bool:
			parts = append(parts, fmt.Sprintf("%s %v", k, v))
		}
		if len(parts) == 4 {
			break
		}
	}
	return "  " + a.paint(green, "✓") + " " + oneLine(fmt.Sprintf("%s  %s", tc.Name, strings.Join(parts, ", ")), 160)
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

// printMessages prints a conversation for people.
func (a *app) printMessages(w io.Writer, ag *client.AgentInfo, msgs []client.Message) {
	for _, m := range msgs {
		at := m.CreatedAt.Local().Format("15:04")
		switch m.Role {
		case client.RoleUser:
			fmt.Fprintf(w, "[%s] you> %s\n", at, m.Text)
		case client.RoleAgent:
			fmt.Fprintf(w, "[%s] %s> %s\n", at, ag.Name, m.Text)
		case client.RoleTool:
			if tc, ok := m.ToolCall(); ok {
				fmt.Fprintf(w, "[%s] %s\n", at, strings.TrimSpace(a.toolLine(tc)))
			} else {
				fmt.Fprintf(w, "[%s] tool: %s\n", at, m.Text)
			}
		default:
			fmt.Fprintf(w, "[%s] %s: %s\n", at, m.Role, m.Text)
		}
	}
}
