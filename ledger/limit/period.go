package limit

import "time"

// Period is the length of a limit's windows.
type Period string

// The periods, shortest first (the order a refusal is reported in).
const (
	Minute Period = "MINUTE"
	Hour   Period = "HOUR"
	Day    Period = "DAY"
	Week   Period = "WEEK"
	Month  Period = "MONTH"
)

// Periods lists every period, shortest first.
var Periods = []Period{Minute, Hour, Day, Week, Month}

// ParsePeriod returns the period named s (upper case), ok false if none.
func ParsePeriod(s string) (Period, bool) {
	for _, p := range Periods {
		if string(p) == s {
			return p, true
		}
	}
	return "", false
}

// Window returns the window of p that contains t: [start, end), on UTC
// boundaries; a WEEK starts on Monday, a MONTH on the 1st.
func (p Period) Window(t time.Time) (start, end time.Time) {
	t = t.UTC()
	y, m, d := t.Date()
	day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	switch p {
	case Minute:
		start = time.Date(y, m, d, t.Hour(), t.Minute(), 0, 0, time.UTC)
		return start, start.Add(time.Minute)
	case Hour:
		start = time.Date(y, m, d, t.Hour(), 0, 0, 0, time.UTC)
		return start, start.Add(time.Hour)
	case Day:
		return day, day.AddDate(0, 0, 1)
	case Week:
		start = day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
		return start, start.AddDate(0, 0, 7)
	case Month:
		start = time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 1, 0)
	}
	return time.Time{}, time.Time{}
}

func rank(p Period) int {
	for i, q := range Periods {
		if q == p {
			return i
		}
	}
	return len(Periods)
}

// windowsAt returns every period's window containing at, as the
// parallel arrays the queries take.
func windowsAt(at time.Time) (periods []string, starts, ends []time.Time) {
	for _, p := range Periods {
		s, e := p.Window(at)
		periods = append(periods, string(p))
		starts = append(starts, s)
		ends = append(ends, e)
	}
	return periods, starts, ends
}
