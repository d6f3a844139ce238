// Package money knows ISO 4217 currencies and their minor units, and rounds
// and checks decimal amounts against them. Amounts are
// github.com/shopspring/decimal values, never floats: 0.1 + 0.2 must be
// 0.3 in a ledger.
//
// The table of currencies and minor units is the one of intake, the ledger
// and the rail alike: github.com/moov-io/iso4217's (ISO 4217 list one as
// published in 2023), corrected by the amendments since (currency.go: HRK
// withdrawn; SLE, VED, ZWG and XCG added). This package narrows it: codes
// must be upper case letters, and the ISO entries that have no minor unit
// (precious metals, bond-market units, SDR, XTS, XXX) are refused, because
// an account balance in them has no defined precision and no credit
// transfer pays them. The values this module relies on are pinned by a
// test, so a change in the table is seen.
//
// Rounding is half-even ("banker's rounding"): a half minor unit goes to
// the even neighbour. Conversions of many payments (a payroll file at one
// rate) then round up as often as down, so the sum of the rounded amounts
// does not drift from the sum of the exact ones in either party's favour,
// which half-up does on every tie. Ties need the exact result to end in
// 5 at the first dropped digit, so they are rare with real rates, but
// they are exactly the cases an auditor checks.
package money
