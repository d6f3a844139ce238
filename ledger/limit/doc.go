// Package limit keeps an account's period limits (MINUTE, HOUR, DAY, WEEK,
// MONTH; in the account currency) and books payments against them.
//
// Windows are UTC: a minute, an hour, a day from midnight, a week from
// Monday 00:00, a month from the 1st. A window row is created by the
// first booking that falls into it, with the limit configured then.
//
// A booking goes into the window of every configured period at its
// instant, all or nothing: the windows are locked in a fixed order, every
// one is checked, and only if all hold the amount are they all moved.
// Otherwise LIMIT_EXCEEDED names the shortest period over, its limit, its
// utilization and the amount, and nothing is booked.
//
// Each booking is recorded per window (reference, period, window, amount),
// so that its reversal takes the amount out of exactly the windows it
// went into. Reversing "the current windows" would take a payment booked
// at 23:59:59 out of the next day's window when the compensation runs
// after midnight, leaving one day overstated and the next understated.
// Reversing twice reverses once, and reversing a reference never booked is
// nothing to do, so a compensation can always call Reverse.
//
// Changing a limit applies at once to the windows still open, but never
// below what such a window has booked: lowering a limit under a window's
// use leaves that window full rather than over its limit, so utilization
// never exceeds the limit (a rule ledger.Verify checks).
package limit
