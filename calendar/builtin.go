package calendar

import (
	"strings"
	"time"
)

// The built-in calendars' names. Put refuses them in any case (target2
// too), so a name never means two calendars to a reader.
const (
	// NameTARGET2 is the euro's TARGET2/T2 (RTGS) calendar: closed on
	// Saturday and Sunday, 1 January, Good Friday, Easter Monday, 1 May,
	// 25 and 26 December.
	NameTARGET2 = "TARGET2"
	// NameWEEKDAYS is open Monday to Friday, with no holiday.
	NameWEEKDAYS = "WEEKDAYS"
)

// BuiltIns are the calendars defined in code, in the order List shows
// them. Each call returns new values: no caller can change another's.
func BuiltIns() []Calendar {
	return []Calendar{
		{Name: NameTARGET2, Weekend: []time.Weekday{time.Sunday, time.Saturday}, BuiltIn: true, rule: target2},
		{Name: NameWEEKDAYS, Weekend: []time.Weekday{time.Sunday, time.Saturday}, BuiltIn: true, rule: func(int) []Date { return nil }},
	}
}

// BuiltIn is the built-in calendar of that name (its exact spelling).
func BuiltIn(name string) (Calendar, bool) {
	for _, c := range BuiltIns() {
		if c.Name == name {
			return c, true
		}
	}
	return Calendar{}, false
}

// reserved reports whether name is a built-in's in any case.
func reserved(name string) bool {
	for _, c := range BuiltIns() {
		if strings.EqualFold(c.Name, name) {
			return true
		}
	}
	return false
}

// target2 lists TARGET2's holidays in year, in order (Good Friday is on or
// after 20 March, Easter Monday on or before 26 April).
func target2(year int) []Date {
	easter := Easter(year)
	return []Date{
		{year, time.January, 1},
		easter.AddDays(-2),
		easter.AddDays(1),
		{year, time.May, 1},
		{year, time.December, 25},
		{year, time.December, 26},
	}
}

// Easter is Easter Sunday of year in the Gregorian calendar (the
// anonymous Gregorian algorithm of Meeus, Jones and Butcher), for any year
// from 1583 on; earlier years get the Gregorian rule extended backwards.
func Easter(year int) Date {
	a := year % 19
	b, c := year/100, year%100
	d, e := b/4, b%4
	f := (b + 8) / 25
	g := (b - f + 1) / 3
	h := (19*a + b - d - g + 15) % 30
	i, k := c/4, c%4
	l := (32 + 2*e + 2*i - h - k) % 7
	m := (a + 11*h + 22*l) / 451
	n := h + l - 7*m + 114
	return Date{Year: year, Month: time.Month(n / 31), Day: n%31 + 1}
}
