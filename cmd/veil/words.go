package main

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
)

// amountDigits is how many decimals people see: enough for a fee on any
// of the six chains, not the 18 of wei.
const amountDigits = 6

// formatAmount shows a decimal amount of whole units with its symbol,
// cut (never rounded up: a balance must not look larger than it is) to
// amountDigits decimals, trailing zeros dropped: "9.999949976784703522"
// ETH is "9.999949 ETH". A non-zero amount below the last digit is
// "<0.000001 ETH". Text that is not a decimal is shown as given.
func formatAmount(dec, symbol string) string {
	r, ok := new(big.Rat).SetString(strings.TrimSpace(dec))
	if !ok || strings.ContainsAny(dec, "eE/") {
		return strings.TrimSpace(dec + " " + symbol)
	}
	neg := r.Sign() < 0
	r.Abs(r)
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(amountDigits), nil)
	units := new(big.Int).Quo(new(big.Int).Mul(r.Num(), scale), r.Denom()) // truncated
	var s string
	switch {
	case units.Sign() == 0 && r.Sign() != 0:
		s = "<0." + strings.Repeat("0", amountDigits-1) + "1"
	default:
		txt := units.String()
		if len(txt) <= amountDigits {
			txt = strings.Repeat("0", amountDigits-len(txt)+1) + txt
		}
		s = txt[:len(txt)-amountDigits] + "." + txt[len(txt)-amountDigits:]
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if neg && s != "0" {
		s = "-" + s
	}
	if symbol == "" {
		return s
	}
	return s + " " + symbol
}

// weiAmount is an integer amount of a chain's smallest native unit in
// whole units with the symbol.
func weiAmount(v string, c chains.ID) string {
	n, ok := new(big.Int).SetString(v, 10)
	if !ok {
		return v
	}
	decimals := int64(18)
	switch c.Family() {
	case chains.FamilySolana:
		decimals = 9
	case chains.FamilyStellar:
		decimals = 7
	}
	r := new(big.Rat).SetFrac(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(decimals), nil))
	return formatAmount(r.FloatString(int(decimals)), c.NativeAsset())
}

var (
	// geth, reth, erigon, anvil: "insufficient funds for gas * price +
	// value: balance 9999…, tx cost 500000…, overshot 490…".
	gethFunds = regexp.MustCompile(`(?i)insufficient funds for gas \* price \+ value: (?:address \S+ )?(?:have|balance) (\d+),? (?:want|tx cost) (\d+)`)
	// Veil's pre-check: "balance 123 wei does not cover the fee 456 wei".
	feeFunds = regexp.MustCompile(`balance (\d+) wei does not cover the fee (\d+) wei`)
	// the chain an error names: "send_payment on base: …", "chains:
	// insufficient funds: base: …".
	chainIn = regexp.MustCompile(`\b(?:on |: )(horizen|ethereum|polygon|base|stellar|solana)\b`)
)

// chainErrorWords rewrites the raw numbers of a chain error into amounts
// people read: "insufficient funds: 9.99 ETH available, 500 ETH (amount
// and fee) needed". Text it does not recognise is returned as is.
func chainErrorWords(text string) string {
	c := chains.Ethereum
	if m := chainIn.FindStringSubmatch(text); m != nil {
		c = chains.ID(m[1])
	}
	where := ""
	if m := chainIn.FindStringSubmatch(text); m != nil {
		where = " on " + m[1]
	}
	if m := gethFunds.FindStringSubmatch(text); m != nil {
		return fmt.Sprintf("insufficient funds%s: %s available, %s needed (amount + network fee); nothing was sent", where, weiAmount(m[1], c), weiAmount(m[2], c))
	}
	if m := feeFunds.FindStringSubmatch(text); m != nil {
		return fmt.Sprintf("insufficient funds%s: %s available, the network fee alone is %s; nothing was sent", where, weiAmount(m[1], c), weiAmount(m[2], c))
	}
	return strings.TrimPrefix(text, "chains: ")
}

// valueTools are the tools that move value: a failure of one is a failed
// payment (exit 7). Kept in step with agent/tools (Tool.MovesValue).
var valueTools = map[string]bool{
	"send_payment": true, "pay_agent": true, "withdraw": true, "withdraw_all": true, "schedule_payment": true,
}

// paymentFailed is the first failed value-moving tool call, if any.
func paymentFailed(resp *client.ChatResponse) (client.ToolCall, bool) {
	for _, tc := range resp.ToolCalls {
		if valueTools[tc.Name] && !tc.OK() {
			return tc, true
		}
	}
	return client.ToolCall{}, false
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
