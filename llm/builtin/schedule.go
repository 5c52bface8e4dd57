package builtin

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/veilhq/veil/agent/intent"
)

// buildSchedule: schedule_payment(recipient, amount, asset?, interval, end_date?).
func buildSchedule(c clause, inherit map[string]any, now time.Time) action {
	iv := interval(c)
	if iv == "" && inherit != nil {
		iv, _ = inherit["interval"].(string)
	}
	if iv == "unsupported" {
		return ask("schedule", intervalHelp)
	}
	end, used, dq := endDate(c, now)
	if dq != "" {
		return ask("schedule", dq)
	}
	if end == "" && inherit != nil {
		end, _ = inherit["end_date"].(string)
	}
	amts := amounts(c, used)
	rs, _ := recipients(c, inherit != nil)
	asset := assetOf(c, amts)
	if asset == "" && inherit != nil {
		asset, _ = inherit["asset"].(string)
	}
	value, q := checkAmounts("schedule", amts, "each payment")
	if q != nil {
		return *q
	}
	assetSp := ""
	if asset != "" {
		assetSp = asset + " "
	}
	to := ""
	if len(rs) == 1 {
		to = rs[0]
	}
	every := ""
	if iv != "" {
		every = everyText(iv)
	}
	if value == "" {
		if to != "" {
			return ask("schedule", fmt.Sprintf("%s %sshould I send to %s %s?", qHowMuch, assetSp, to, orDefault(every, "each time")))
		}
		return ask("schedule", fmt.Sprintf("%s %sshould each payment be, and to whom? For example “send 5 USDC to bob every week”.", qHowMuch, assetSp))
	}
	if len(rs) > 1 {
		return ask("schedule", fmt.Sprintf("I can schedule one recipient per request: please set up a schedule for each of %s separately.", strings.Join(rs, " and ")))
	}
	if to == "" {
		return ask("schedule", fmt.Sprintf("%s send %s %s%s to? Say it with the name, e.g. “send %s %sto carol %s”.", qWho, value, assetSp, orDefault(every, "each time"), value, assetSp, orDefault(every, "every week")))
	}
	if iv == "" {
		return ask("schedule", fmt.Sprintf("%s should I send %s %sto %s: daily, weekly, monthly, every friday, every 6 hours…? Say e.g. “send %s %sto %s every week”.", qHowOften, value, assetSp, to, value, assetSp, to))
	}
	args := map[string]any{"recipient": to, "amount": value, "interval": iv}
	if asset != "" {
		args["asset"] = asset
	}
	if end != "" {
		args["end_date"] = end
	}
	return call("schedule", "schedule_payment", args)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// buildManage: manage_schedule(schedule_id, action).
func buildManage(c clause) action {
	verb := manageVerb(c)
	id := scheduleID(c)
	if id == "" {
		// Named by what it does: the tool finds the one schedule that fits
		// (several: it changes nothing and lists them, and the answer asks).
		args := map[string]any{"action": verb}
		if rs, _ := recipients(c, false); len(rs) == 1 {
			args["recipient"] = rs[0]
		} else if r := possessive(c); r != "" {
			args["recipient"] = r
		} else if i := c.find("paying"); i >= 0 && i+1 < len(c.toks) {
			if r, ok := recipientOf(c.toks[i+1]); ok {
				args["recipient"] = r
			}
		}
		if amts := amounts(c, nil); len(amts) == 1 {
			args["amount"] = amts[0].value
			if a := assetOf(c, amts); a != "" {
				args["asset"] = a
			}
		}
		if iv := interval(c); iv != "" && iv != "unsupported" {
			args["interval"] = iv
		} else {
			// "the friday payment": a weekday schedule.
			for _, t := range c.toks {
				if weekdays[t.low] && t.low != "weekend" {
					if d, ok := weekdayOf(t.low); ok {
						args["interval"] = d
					}
				}
			}
		}
		if len(args) > 1 {
			return call("manage", "manage_schedule", args)
		}
		return ask("manage", fmt.Sprintf("Which schedule should I %s? Tell me its id (“list my schedules” shows them), e.g. “%s schedule 3f2a”.", verb, verb))
	}
	return call("manage", "manage_schedule", map[string]any{"schedule_id": id, "action": verb})
}

// interval is the schedule interval a clause names, in schedule_payment's
// canonical form (hourly, every-N-hours, daily, weekly, a weekday,
// monthly), "unsupported" for other periods, or "".
func interval(c clause) string {
	ws := c.toks
	low := func(i int) string {
		if i >= 0 && i < len(ws) {
			return ws[i].low
		}
		return ""
	}
	for i, t := range ws {
		prev, next := low(i-1), low(i+1)
		switch t.low {
		case "daily", "everyday", "nightly":
			return "daily"
		case "weekly":
			return "weekly"
		case "monthly":
			return "monthly"
		case "hourly":
			return "hourly"
		case "biweekly", "fortnightly", "bimonthly", "yearly", "annually", "annual", "quarterly", "semimonthly", "biannually":
			return "unsupported"
		case "twice", "thrice":
			if next == "a" || next == "per" || next == "every" || next == "daily" {
				if n := low(i + 2); n == "day" || next == "daily" {
					return map[string]string{"twice": "every-12-hours", "thrice": "every-8-hours"}[t.low]
				}
				return "unsupported"
			}
		case "every", "each", "per", "a", "an":
			if (t.low == "every" || t.low == "each") && next == "single" {
				next = low(i + 2) // "every single day"
			}
			if t.low == "each" && next == "and" && low(i+2) == "every" {
				continue // "each and every day": "every" decides
			}
			if (t.low == "a" || t.low == "an" || t.low == "per") && (prev == "for" || prev == "in" || prev == "until" || prev == "till" || prev == "within" || prev == "than") {
				continue
			}
			switch next {
			case "day", "morning", "night", "evening", "afternoon":
				return "daily"
			case "week":
				return "weekly"
			case "month":
				return "monthly"
			case "hour":
				return "hourly"
			case "year", "minute", "quarter", "other", "fortnight", "second":
				if t.low == "every" || t.low == "each" || t.low == "per" {
					return "unsupported"
				}
			}
			if t.low != "every" && t.low != "each" {
				continue
			}
			if day, ok := weekdayOf(next); ok {
				return day
			}
			if next == "weekday" || next == "weekend" || next == "weekdays" || next == "weekends" {
				return "unsupported"
			}
			n, used := countAt(ws, i+1)
			if used > 0 {
				unit := strings.TrimSuffix(low(i+1+used), "s")
				switch {
				case unit == "hour" && n == 1:
					return "hourly"
				case unit == "hour" && n >= 2 && n <= 23:
					return fmt.Sprintf("every-%d-hours", n)
				case unit == "hour" && n == 24 || unit == "day" && n == 1:
					return "daily"
				case unit == "week" && n == 1 || unit == "day" && n == 7:
					return "weekly"
				case unit == "month" && n == 1:
					return "monthly"
				case unit == "hour" || unit == "day" || unit == "week" || unit == "month" || unit == "year" || unit == "minute":
					return "unsupported"
				}
			}
		}
		// "on fridays", "fridays": weekly on that day ("on friday" alone
		// is a date, not an interval).
		if w := t.low; strings.HasSuffix(w, "days") && w != "days" && !strings.HasSuffix(w, "holidays") {
			if day, ok := weekdayOf(w); ok {
				return day
			}
		}
	}
	return ""
}

// weekdayOf reads "friday", "fridays", "fri" as the weekday's name.
func weekdayOf(w string) (string, bool) {
	w = strings.TrimSuffix(w, "s")
	for _, d := range []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"} {
		if w == d || len(w) >= 3 && strings.HasPrefix(d, w) && (len(w) == 3 || w == "tues" || w == "thur" || w == "thurs") {
			return d, true
		}
	}
	return "", false
}

// countAt reads a count at ws[i]: digits or words ("6", "six"); used is
// how many words it took.
func countAt(ws []tok, i int) (int, int) {
	if i >= len(ws) {
		return 0, 0
	}
	if n, err := strconv.Atoi(ws[i].low); err == nil {
		return n, 1
	}
	var words []string
	for _, t := range ws[i:] {
		words = append(words, t.low)
	}
	v, used := intent.WordNumber(words)
	if used == 0 {
		return 0, 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, 0
	}
	return n, used
}

const intervalHelp = "I can schedule payments hourly, every few hours (“every 6 hours”), daily, weekly, on a weekday (“every friday”) or monthly. Which would you like?"
