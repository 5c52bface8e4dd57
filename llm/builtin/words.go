package builtin

import (
	"math/big"
	"regexp"
	"strings"

	"github.com/veilhq/veil/agent/intent"
	"github.com/veilhq/veil/chains"
)

// assets maps the words the planner accepts for an asset to its symbol.
var assets = map[string]string{
	"usdc": "USDC", "usdt": "USDT", "eth": "ETH", "ether": "ETH", "ethers": "ETH",
	"zen": "ZEN", "xlm": "XLM", "lumen": "XLM", "lumens": "XLM", "sol": "SOL",
	"pol": "POL", "matic": "POL", "dai": "DAI", "eurc": "EURC", "weth": "WETH",
	"usd": "USDC", "dollar": "USDC", "dollars": "USDC", "bucks": "USDC",
}

// chainNames are the chains a message may name ("base" needs context).
var chainNames = map[string]string{
	"horizen": "horizen", "ethereum": "ethereum", "polygon": "polygon",
	"base": "base", "stellar": "stellar", "solana": "solana",
}

var numberWords = map[string]string{
	"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
	"seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
	"twenty": "20", "fifty": "50", "hundred": "100",
}

var monthNames = map[string]int{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
	"may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
	"september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
	"december": 12, "dec": 12,
}

var weekdays = map[string]bool{
	"monday": true, "tuesday": true, "wednesday": true, "thursday": true, "friday": true,
	"saturday": true, "sunday": true, "mondays": true, "tuesdays": true, "wednesdays": true,
	"thursdays": true, "fridays": true, "saturdays": true, "sundays": true, "weekend": true,
}

var payVerbs = map[string]bool{
	"send": true, "pay": true, "transfer": true, "tip": true, "give": true, "wire": true,
	"remit": true, "sending": true, "paying": true, "transferring": true, "shoot": true, "move": true,
	"settle": true, "zap": true, "throw": true, "forward": true, "reimburse": true, "repay": true, "venmo": true,
	"payout": true, "spot": true, "gift": true, "donate": true, "tipping": true, "snd": true, "sned": true, "pya": true,
	"trasnfer": true, "tranfer": true, "transfr": true, "paay": true, "sent": true, "paid": true,
	"transferred": true, "gave": true, "wired": true, "tipped": true, "sending,": true,
}

var greetWords = map[string]bool{
	"hi": true, "hello": true, "hey": true, "heya": true, "hiya": true, "yo": true, "howdy": true,
	"gm": true, "good": true, "morning": true, "afternoon": true, "evening": true, "there": true,
	"greetings": true, "veil": true, "agent": true, "sup": true, "hola": true, "ok": true, "okay": true,
	"buddy": true, "friend": true, "!": true, "?": true, "please": true,
}

var thanksWords = map[string]bool{
	"thanks": true, "thank": true, "thx": true, "ty": true, "cheers": true, "appreciated": true,
	"great": true, "awesome": true, "perfect": true, "nice": true, "cool": true, "you": true,
	"so": true, "much": true, "a": true, "lot": true, "very": true, "ok": true, "okay": true,
}

// notRecipient are words that follow "to" or a verb without being a payee.
var notRecipient = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`tell ask let remind message email text check show make create get see look find go keep put call wait hold stop thank
		me myself my mine you your yours yourself him her hers them they us we our ours it its she he his i i'm im i'll i've was great good thx lol
		this that these those the a an some someone somebody anyone anybody everyone everybody all each every
		friend friends wallet wallets account accounts address addresses agent agents user users person people money
		funds fund cash tokens token coins coin crypto payment payments there here who what which whom whose
		please now today tomorrow tonight later back again also and or but for from with on in at by of via over
		using through into onto week weeks month months day days year years daily weekly monthly every until till
		til schedule schedules invoice invoices balance balances total amount same other another own new main
		default memo note then just only more less much many how when where why yes no not be is are was were do
		does did send pay transfer tip give wire remit chain chains network networks stealth withdraw everything
		nothing half max maximum minimum min sure ok okay thanks thank name names registry hello hi hey help
		test testnet faucet usd dollar dollars bucks either both none`) {
		notRecipient[w] = true
	}
	for w := range assets {
		notRecipient[w] = true
	}
	for w := range chainNames {
		notRecipient[w] = true
	}
	for w := range monthNames {
		notRecipient[w] = true
	}
	for w := range weekdays {
		notRecipient[w] = true
	}
	for w := range numberWords {
		notRecipient[w] = true
	}
}

var (
	reIDWord   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,30}[a-z0-9]$`) // a word that may be an id
	reMeta     = regexp.MustCompile(`^st:[a-z]{2,8}:[0-9A-Za-z]{16,300}$`)
	reHexAddr  = regexp.MustCompile(`^0x[0-9a-fA-F]{3,128}$`)
	reStellar  = regexp.MustCompile(`^G[A-Z2-7]{55}$`)
	reBase58   = regexp.MustCompile(`^[1-9A-HJ-NP-Za-km-z]{32,44}$`)
	reNumber   = regexp.MustCompile(`^(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?$`)
	reSchedID  = regexp.MustCompile(`^[0-9a-f]{4,}(-[0-9a-f]+)*$`)
	reAnyDigit = regexp.MustCompile(`\d`)
	reISODate  = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})$`)
	reOrdinal  = regexp.MustCompile(`^(\d{1,2})(st|nd|rd|th)?$`)
	reUpperSym = regexp.MustCompile(`^[A-Z]{2,6}$`)
	// reLongToken: something address-like we don't know the format of.
	reLongToken = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9:_-]{19,200}$`)
)

// addressLike reports whether s is a meta-address or chain address (kept
// in the user's spelling).
func addressLike(s string) bool {
	if reMeta.MatchString(s) || reHexAddr.MatchString(s) || reStellar.MatchString(s) {
		return true
	}
	return reBase58.MatchString(s) && reAnyDigit.MatchString(s)
}

// recipientOf returns the payee a word names: a meta-address or address
// as written, or a Veil name in lower case ("Bob's" → "bob").
func recipientOf(t tok) (string, bool) {
	if addressLike(t.raw) {
		return t.raw, true
	}
	low := t.low
	for _, suf := range []string{"'s", "’s"} {
		low = strings.TrimSuffix(low, suf)
	}
	if notRecipient[low] || !chains.ValidName(strings.TrimSuffix(low, chains.NameSuffix)) {
		return "", false
	}
	if !strings.ContainsAny(low, "abcdefghijklmnopqrstuvwxyz") {
		return "", false
	}
	if _, _, _, ok := parseNumber(low); ok {
		return "", false
	}
	return low, true
}

// parseNumber reads an amount word: "5", "0.5", ".5", "1,000.25", "$5",
// "5$", "5usdc", "-3". It returns the decimal string, an asset implied by
// the word ("$" → USDC, "5usdc" → USDC), and whether it was negative.
func parseNumber(raw string) (value, asset string, neg, ok bool) {
	s := raw
	for _, p := range []string{"-", "−", "+"} {
		if strings.HasPrefix(s, p) {
			neg = p != "+"
			s = s[len(p):]
			break
		}
	}
	if strings.HasPrefix(s, "$") {
		asset, s = "USDC", s[1:]
	} else if strings.HasSuffix(s, "$") {
		asset, s = "USDC", s[:len(s)-1]
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == ',') {
		i++
	}
	num, suffix := s[:i], strings.ToLower(s[i:])
	if num == "" || !reAnyDigit.MatchString(num) || !reNumber.MatchString(num) || len(num) > 40 {
		return "", "", false, false
	}
	value = strings.ReplaceAll(num, ",", "")
	if strings.HasPrefix(value, ".") {
		value = "0" + value
	}
	if suffix != "" {
		if u, ok := intent.UnitOf(suffix); ok && suffix != "m" {
			// "2k", "5gwei", "$1.5k": the amount the unit makes, exactly.
			if value, ok = scaleValue(value, u); !ok || (u.Asset != "" && asset != "" && asset != u.Asset) {
				return "", "", false, false
			}
			if asset == "" {
				asset = u.Asset
			}
			return value, asset, neg, true
		}
		sym, known := assets[suffix]
		if !known || asset != "" {
			return "", "", false, false
		}
		asset = sym
	}
	return value, asset, neg, true
}

// scaleValue is the decimal value × 10^u.Exp, exactly.
func scaleValue(value string, u intent.Unit) (string, bool) {
	r, ok := new(big.Rat).SetString(value)
	if !ok {
		return "", false
	}
	return intent.DecimalString(intent.Scale(r, u.Exp))
}

// isZero reports whether a decimal string is zero.
func isZero(v string) bool { return strings.Trim(v, "0.") == "" }
