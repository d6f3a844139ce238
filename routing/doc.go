// Package routing is where a payment leaves: the rails as configuration,
// the ordered rules that choose one, and each tenant's rule for a payment
// that cannot make its rail's cut-off.
//
// A rail (Rail) is a name, a type (how its instructions are written:
// SEPA_JSON, PACS008), an endpoint, the rate-limit config that is its
// connection's limit (package pacing), and its business day: the time it
// opens and its cut-off, as clocks read them in its time zone, on the days
// its calendar (package calendar) keeps open. A rail without a cut-off
// takes payments around the clock.
//
// A payment names its rail, or the first routing rule (Rule) that matches
// it (tenant, currency, amount range, source) does; a payment no rule
// routes is refused at intake. Its execution date is its requested date in
// the rail's zone, moved to the rail's next business day when the calendar
// closes that day (Rail.DayFor). Phase A paces it under the rail's config
// with the day's cut-off as the deadline; a payment with no slot before it
// meets its tenant's CutoffRule: ROLL to the next business day's opening,
// HOLD for an operator, or REJECT. Nothing is sent after a cut-off.
//
// The package knows rails as configuration and dates, not how an
// instruction is written or sent (package rail, an adapter) nor what a
// payment is (package payment, which uses it). A fresh database has one
// rail, DEFAULT, and one rule routing everything to it.
package routing
