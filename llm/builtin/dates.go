package builtin

import (
	"fmt"
	"strconv"
	"time"
)

// endDate reads a schedule's end from a clause. Dates are calendar dates
// in UTC, written YYYY-MM-DD. Understood, after "until", "till", "through",
// "ending", "ends" or "by":
//
//	until March            the next 1 March after today (if today is in
//	                       March: next year's)
//	until the end of March the last day of the next March that has not
//	                       ended yet
//	until March 15 / until 15 March / until March 15th 2027 / until 2027-03-15
//	                       that day (without a year: the next such day after today)
//	until next week|month|year   today + 7 days / first of next month / 1 January next year
//	until tomorrow
//
// and "for N days|weeks|months|years" (N digits or one..twelve, or "a"):
// today plus that much. It returns the date, the indexes of the words it
// used (so they are not read as amounts), and a question when the date is
// not understood or already past.
func endDate(c clause, now time.Time) (date string, used map[int]bool, ask string) {
	used = map[int]bool{}
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	ws := c.toks
	for i := 0; i < len(ws); i++ {
		switch ws[i].low {
		case "until", "till", "til", "through", "thru", "ending", "ends", "end", "by":
			if ws[i].low == "end" && !(i+1 < len(ws) && ws[i+1].low == "on") {
				continue
			}
			if ws[i].low == "by" && !(i+1 < len(ws) && (monthNames[ws[i+1].low] > 0 || reISODate.MatchString(ws[i+1].low))) {
				continue
			}
			j := i + 1
			for j < len(ws) && (ws[j].low == "on" || ws[j].low == "the" || ws[j].low == "in") {
				j++
			}
			d, n, ok := parseDate(ws[j:], today)
			for k := i; k < j+n; k++ {
				used[k] = true
			}
			if !ok {
				if j < len(ws) {
					used[j] = true
				}
				return "", used, fmt.Sprintf("I didn't understand the end date after %q. Please give it like “until March 1” or “until 2027-03-01”.", ws[i].raw)
			}
			if !d.After(today) {
				return "", used, fmt.Sprintf("The end date %s has already passed. When should the payments stop?", d.Format("2006-01-02"))
			}
			return d.Format("2006-01-02"), used, ""
		case "for":
			if i+2 >= len(ws) {
				continue
			}
			n, ok := smallCount(ws[i+1].low)
			if !ok {
				continue
			}
			var d time.Time
			switch ws[i+2].low {
			case "day", "days":
				d = today.AddDate(0, 0, n)
			case "week", "weeks":
				d = today.AddDate(0, 0, 7*n)
			case "month", "months":
				d = addMonths(today, n)
			case "year", "years":
				d = today.AddDate(n, 0, 0)
			default:
				continue
			}
			used[i], used[i+1], used[i+2] = true, true, true
			return d.Format("2006-01-02"), used, ""
		}
	}
	return "", used, ""
}

func smallCount(s string) (int, bool) {
	if s == "a" || s == "an" || s == "one" {
		return 1, true
	}
	if v, ok := numberWords[s]; ok {
		n, _ := strconv.Atoi(v)
		return n, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 1200 {
		return 0, false
	}
	return n, true
}

// addMonths adds n calendar months, clamping the day (31 Jan + 1 → 28/29 Feb).
func addMonths(t time.Time, n int) time.Time {
	y, m := t.Year(), int(t.Month())+n
	y += (m - 1) / 12
	m = (m-1)%12 + 1
	last := time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
	d := t.Day()
	if d > last {
		d = last
	}
	return time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
}

// parseDate reads a date at the start of ws; n is how many words it used.
func parseDate(ws []tok, today time.Time) (time.Time, int, bool) {
	if len(ws) == 0 {
		return time.Time{}, 0, false
	}
	w0 := ws[0].low
	if m := reISODate.FindStringSubmatch(w0); m != nil {
		y, _ := strconv.Atoi(m[1])
		mo, _ := strconv.Atoi(m[2])
		d, _ := strconv.Atoi(m[3])
		t, ok := validDate(y, mo, d)
		return t, 1, ok
	}
	switch w0 {
	case "tomorrow":
		return today.AddDate(0, 0, 1), 1, true
	case "next":
		if len(ws) > 1 {
			switch ws[1].low {
			case "week":
				return today.AddDate(0, 0, 7), 2, true
			case "month":
				return time.Date(today.Year(), today.Month()+1, 1, 0, 0, 0, 0, time.UTC), 2, true
			case "year":
				return time.Date(today.Year()+1, 1, 1, 0, 0, 0, 0, time.UTC), 2, true
			}
			if m := monthNames[ws[1].low]; m > 0 {
				t, n, ok := parseDate(ws[1:], today)
				return t, n + 1, ok
			}
		}
		return time.Time{}, 1, false
	case "end":
		// "end of March", "end of the month", "end of the year"
		j := 1
		for j < len(ws) && (ws[j].low == "of" || ws[j].low == "the" || ws[j].low == "this") {
			j++
		}
		if j < len(ws) {
			switch ws[j].low {
			case "month":
				return time.Date(today.Year(), today.Month()+1, 0, 0, 0, 0, 0, time.UTC), j + 1, true
			case "year":
				return time.Date(today.Year(), 12, 31, 0, 0, 0, 0, time.UTC), j + 1, true
			}
			if m := monthNames[ws[j].low]; m > 0 {
				y := today.Year()
				last := time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC)
				if !last.After(today) {
					last = time.Date(y+1, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC)
				}
				n := j + 1
				if n < len(ws) && isYear(ws[n].low) {
					yy, _ := strconv.Atoi(ws[n].low)
					last = time.Date(yy, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC)
					n++
				}
				return last, n, true
			}
		}
		return time.Time{}, j, false
	}
	// "March", "March 15", "March 15th 2027", "March 2027"
	if m := monthNames[w0]; m > 0 {
		n := 1
		day := 1
		if n < len(ws) {
			if o := reOrdinal.FindStringSubmatch(ws[n].low); o != nil && !isYear(ws[n].low) {
				day, _ = strconv.Atoi(o[1])
				n++
			}
		}
		return onDay(ws, n, today, m, day)
	}
	// "15 March", "15th of March 2027"
	if o := reOrdinal.FindStringSubmatch(w0); o != nil {
		day, _ := strconv.Atoi(o[1])
		n := 1
		if n < len(ws) && ws[n].low == "of" {
			n++
		}
		if n < len(ws) {
			if m := monthNames[ws[n].low]; m > 0 {
				return onDay(ws, n+1, today, m, day)
			}
		}
	}
	return time.Time{}, 1, false
}

// onDay ends a date of month m and day whose words run to ws[n]: in the
// year ws[n] names, or else the next such day after today. It answers the
// date, the words read and whether the day exists.
func onDay(ws []tok, n int, today time.Time, m, day int) (time.Time, int, bool) {
	if n < len(ws) && isYear(ws[n].low) {
		y, _ := strconv.Atoi(ws[n].low)
		t, ok := validDate(y, m, day)
		return t, n + 1, ok
	}
	return nextOccurrence(today, m, day), n, dayExists(m, day)
}

func isYear(s string) bool {
	if len(s) != 4 {
		return false
	}
	y, err := strconv.Atoi(s)
	return err == nil && y >= 2000 && y <= 2200
}

func validDate(y, m, d int) (time.Time, bool) {
	if m < 1 || m > 12 || d < 1 || d > 31 {
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	return t, t.Day() == d && int(t.Month()) == m
}

func dayExists(m, d int) bool {
	if m < 1 || m > 12 || d < 1 {
		return false
	}
	// 29 February exists in leap years: allow it.
	last := time.Date(2024, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
	return d <= last
}

// nextOccurrence is the first (m, d) strictly after today; for a bare
// month ("until March") the first 1 March strictly after today.
func nextOccurrence(today time.Time, m, d int) time.Time {
	for y := today.Year(); y <= today.Year()+8; y++ {
		t, ok := validDate(y, m, d)
		if ok && t.After(today) {
			return t
		}
	}
	return time.Date(today.Year()+1, time.Month(m), 1, 0, 0, 0, 0, time.UTC)
}
