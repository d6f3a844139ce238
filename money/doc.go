// Package money knows ISO 4217 currencies and their minor units, and rounds
// and checks decimal amounts against them. Amounts are
// github.com/shopspring/decimal values, never floats: 0.1 + 0.2 must be
// 0.3 in a ledger.
//
// The table of currencies and minor units is github.com/Rhymond/go-money's
// (ISO 4217 digits, maintained); this package only narrows it: codes must be
// upper case, and the ISO entries that have no minor unit at all (gold,
// silver, special drawing rights: XAU, XAG, XDR) are refused, because an
// account balance in them has no defined precision. The values this ledger
// relies on are pinned by a test, so a change in the table is seen.
//
// Rounding is half-even ("banker's rounding"): a half minor unit goes to
// the even neighbour. Conversions of many payments (a payroll file at one
// rate) then round up as often as down, so the sum of the rounded amounts
// does not drift from the sum of the exact ones in either party's favour,
// which half-up does on every tie. Ties need the exact result to end in
// 5 at the first dropped digit, so they are rare with real rates, but
// they are exactly the cases an auditor checks.
package money
