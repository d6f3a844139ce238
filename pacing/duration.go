package pacing

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// isoDuration matches the ISO-8601 durations a window size takes: days and
// time parts (PT4S, PT0.5S, PT1M30S, P1D); years and months have no fixed
// length and are refused.
var isoDuration = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d{1,3})?)S)?)?$`)

// ParseISODuration reads an ISO-8601 duration such as "PT4S".
func ParseISODuration(s string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(strings.ToUpper(strings.TrimSpace(s)))
	if m == nil || s == "P" || strings.HasSuffix(strings.ToUpper(s), "T") {
		return 0, fmt.Errorf("%q is not an ISO-8601 duration such as PT4S", s)
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute} {
		if m[i+1] != "" {
			n, err := strconv.ParseInt(m[i+1], 10, 32)
			if err != nil {
				return 0, fmt.Errorf("%q: %w", s, err)
			}
			d += time.Duration(n) * unit
		}
	}
	if m[4] != "" {
		f, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return 0, fmt.Errorf("%q: %w", s, err)
		}
		d += time.Duration(f*1000+0.5) * time.Millisecond
	}
	return d, nil
}

// FormatISODuration writes d as an ISO-8601 duration, e.g. PT4S or PT0.5S.
func FormatISODuration(d time.Duration) string {
	if d == 0 {
		return "PT0S"
	}
	var b strings.Builder
	b.WriteString("P")
	if days := d / (24 * time.Hour); days > 0 {
		fmt.Fprintf(&b, "%dD", days)
		d -= days * 24 * time.Hour
	}
	if d == 0 {
		return b.String()
	}
	b.WriteString("T")
	if h := d / time.Hour; h > 0 {
		fmt.Fprintf(&b, "%dH", h)
		d -= h * time.Hour
	}
	if m := d / time.Minute; m > 0 {
		fmt.Fprintf(&b, "%dM", m)
		d -= m * time.Minute
	}
	if d > 0 {
		b.WriteString(strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
		b.WriteString("S")
	}
	return b.String()
}
