// Package calendar says which days a payment rail does business. A rail
// has a cut-off time in its own time zone and a business-day calendar; a
// payment's execution date is its requested date, moved to the calendar's
// next business day when the calendar closes that day. This package is
// the calendar part: it knows nothing of payments or rails.
//
// # Dates
//
// Date is a civil date (year, month, day) in no time zone, written
// YYYY-MM-DD (ParseDate, String, and as JSON text). DateOf is the date an
// instant falls on in a location, and Date.At the instant a location's
// clocks show a time of day on a date, with a fixed rule for the hours
// that summer time skips or repeats (see At). The package has its own
// Date rather than cloud.google.com/go/civil's: civil is light, but an
// alias of its Date could not carry At, and its parser is time.Parse,
// whose errors quote the whole input; ParseDate reads ten bytes at most
// and says what it wants.
//
// # Calendars
//
// A Calendar is closed on its Weekend (days of the week) and on its
// ClosingDays; every other day is a business day (Open). NextOpen is the
// first business day on or after a date (a payment's execution date),
// NextOpenAfter the first after it (the next day once a cut-off has
// passed); both give up with ErrNoBusinessDay after SearchDays, so a
// calendar closed for years cannot keep them looping. ClosingDaysIn lists
// a year's closing days.
//
// Two calendars are built in, computed for any year rather than listed:
// TARGET2 (the euro's RTGS: Saturday, Sunday, 1 January, Good Friday,
// Easter Monday, 1 May, 25 and 26 December; Easter by the Gregorian
// computus) and WEEKDAYS (Saturday and Sunday, no holiday). Their names
// are reserved in any case: Put refuses them with ErrBuiltIn.
//
// Operators define the others: Validate checks one (name, weekend of at
// most six days, at most MaxClosingDays closing days from MinYear to
// MaxYear) and reports every problem in one *field.Invalid, errors.Is
// ErrInvalid.
//
// # Storage
//
// Put, Get and List take a DBTX, a pool or the caller's transaction, so
// that the admin API commits a change and its audit entry together. Get
// and List answer the built-ins from code. A calendar is one row of
// table calendars, its closing days a date[] (the migration says why).
// There is no Delete yet: a calendar that a rail uses must not go, and
// rails are not built; Delete comes with them, refusing a calendar in use.
//
// Cache reads calendars through to the database at most once per TTL
// (5 s) per name, for the hot path that looks up a calendar for each
// chunk of payments; absence is cached too, database errors are not.
package calendar
