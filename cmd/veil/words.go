package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
)

// formatAmount shows a decimal amount of whole units with its symbol,
// cut to a few decimals (chains.DisplayAmount, shared with the agent's
// replies).
var formatAmount = chains.DisplayAmount

// chainErrorWords rewrites the raw numbers of a chain error into amounts
// people read (chains.ErrorWords): "insufficient funds: 9.99 ETH
// available, 500 ETH (amount and fee) needed".
func chainErrorWords(text string) string {
	return strings.TrimPrefix(chains.ErrorWords(text), "chains: ")
}

// paymentFailed is the first failed value-moving tool call, if any.
func paymentFailed(resp *client.ChatResponse) (client.ToolCall, bool) {
	for _, tc := range resp.ToolCalls {
		// A failure of a tool that moves value (tools.MovesValue, the
		// tools' own flag) is a failed payment: exit 7.
		if tools.MovesValue(tc.Name) && !tc.OK() {
			return tc, true
		}
	}
	return client.ToolCall{}, false
}

// paymentPending finds a payment of the answer that is on its way with
// its outcome unknown (status "pending": signed and recorded; the user is
// told when it settles).
func paymentPending(resp *client.ChatResponse) (client.ToolCall, bool) {
	for _, tc := range resp.ToolCalls {
		if tools.MovesValue(tc.Name) && tc.OK() && tc.Field("status") == tools.StatusPending {
			return tc, true
		}
	}
	return client.ToolCall{}, false
}

// errPaymentPending ends chat with exit 8 after the reply was printed.
type errPaymentPending struct{ tool, id string }

func (e *errPaymentPending) Error() string {
	return fmt.Sprintf("the payment is on its way (%s, payment %s) and its outcome is not known yet; you will be told when it confirms: do not send it again", e.tool, e.id)
}

// errPaymentFailed ends chat with exit 7 after the reply was printed.
type errPaymentFailed struct{ tool, text string }

func (e *errPaymentFailed) Error() string {
	return fmt.Sprintf("the payment failed (%s): %s", e.tool, chainErrorWords(e.text))
}

// jsonChat is a chat answer for --json: the API's shape, but each tool's
// detail is the JSON object it holds (not JSON inside a string).
type jsonChat struct {
	Response       string         `json:"response"`
	ConversationID string         `json:"conversationId"`
	ToolCalls      []jsonToolCall `json:"toolCalls"`
}

type jsonToolCall struct {
	Name   string          `json:"name"`
	Status string          `json:"status"`
	Detail json.RawMessage `json:"detail,omitempty"`
}

func toJSONChat(resp *client.ChatResponse) jsonChat {
	out := jsonChat{Response: resp.Response, ConversationID: resp.ConversationID, ToolCalls: []jsonToolCall{}}
	for _, tc := range resp.ToolCalls {
		j := jsonToolCall{Name: tc.Name, Status: tc.Status}
		switch {
		case tc.Detail == "":
		case json.Valid([]byte(tc.Detail)):
			j.Detail = json.RawMessage(tc.Detail)
		default:
			raw, _ := json.Marshal(tc.Detail) // plain text stays a string
			j.Detail = raw
		}
		out.ToolCalls = append(out.ToolCalls, j)
	}
	return out
}

// explorerLink is the link to show for a transaction the server linked as
// u: the user's template for its chain when there is one (config
// "explorers": {"base": "https://basescan.org/tx/{hash}"}, or env
// VEIL_EXPLORER_<CHAIN>), else the server's link (the network's explorer;
// on devnets the console's explorer page).
func (a *app) explorerLink(resp *client.ChatResponse, u string) string {
	for _, tc := range resp.ToolCalls {
		if tc.Field("txLink") != u {
			continue
		}
		chain, hash := tc.Field("chain"), tc.Field("txHash")
		if chain == "" || hash == "" {
			return u
		}
		tpl := firstNonEmpty(a.getenv("VEIL_EXPLORER_"+strings.ToUpper(chain)), a.cfg.Explorers[chain])
		if strings.Contains(tpl, "{hash}") {
			return strings.ReplaceAll(tpl, "{hash}", hash)
		}
		return u
	}
	return u
}

// printStatus prints the statuses of an agent's chains for people, and
// the chains that failed.
func (a *app) printStatus(ag *client.AgentInfo, list []*client.AgentStatus, failed map[string]error) error {
	fmt.Fprintln(a.stdout, a.paint(bold, ag.FullName()))
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for _, st := range list {
		ch := chains.ID(st.Chain)
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", a.paint(cyan, st.Chain), formatAmount(st.Balance, ch.NativeAsset()), st.Address)
		for _, sym := range sortedKeys(st.Tokens) {
			fmt.Fprintf(tw, "  \t%s\t\n", formatAmount(st.Tokens[sym], sym))
		}
		if st.PendingInvoices > 0 {
			fmt.Fprintf(tw, "  \t%d pending invoice(s)\t\n", st.PendingInvoices)
		}
	}
	for _, ch := range sortedKeys(failed) {
		fmt.Fprintf(tw, "  %s\t%s\t\n", a.paint(cyan, ch), a.paint(red, "unavailable: "+errText(failed[ch])))
	}
	return tw.Flush()
}
