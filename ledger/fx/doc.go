// Package fx keeps FX rates and contracts: set and list rates, quote a
// conversion, book it as a contract, unwind it.
//
// # Rates and quotes
//
// A rate says 1 base = rate quote. A payment in currency C from an
// account in currency D needs D→C: the direct rate (D, C) is used when it
// is set (debit = credit / rate); otherwise the inverse rate (C, D) is
// used as it stands (debit = credit × rate); never a cross through a
// third currency. Neither set: FX_UNAVAILABLE.
//
// The debit amount is rounded half-even to the account currency's minor
// units (JPY none, BHD three), decided on the exact quotient, not on a
// quotient already rounded to some precision. Half-even: over a payroll
// file of conversions at one rate, ties go up as often as down, so neither
// the bank nor the customer gains from rounding in aggregate.
//
// A Quote is a value. The process takes it once and keeps it in its data;
// the debit uses its DebitAmount and the contract booking books it as it
// is, so the two cannot disagree even if the rate changes between the
// steps. Book recomputes the debit amount from the quote's rate and
// refuses a quote that does not add up (INVALID_QUOTE), or whose debit
// currency is not the account's (CURRENCY_MISMATCH).
//
// # Unwinding
//
// Unwind on a contract already unwound is FX_ALREADY_UNWOUND: for an
// operator, a second unwind is a mistake worth saying. The compensation
// calls UnwindIfBooked(reference): it unwinds the contract booked under
// the step's reference if it is still booked, and is success otherwise
// (already unwound, or never booked because the booking step never ran),
// so it can be delivered any number of times.
package fx
