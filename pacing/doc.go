// Package pacing turns "500,000 events at 16:00" into a paced schedule
// (docs/design.md, "Pacing"): time is cut into fixed windows per named config, each window
// takes at most MaxPerWindow events, and each event gets a slot inside a
// window; a full window sends the next event on to the first open one.
//
// Slots are stratified: the k-th slot of a window falls at a random point
// of the first half of the k-th of MaxPerWindow equal sub-intervals of it,
// so a window of 100 slots over 4 seconds puts exactly 25 into each second,
// where uniform random jitter alone puts 25 ± 4; the second half of each
// sub-interval is a guard for the lag of whatever starts at the slot. Assignment is idempotent on the event id, takes
// one database round trip per call (one event or a batch requesting one
// instant: the PL/pgSQL function pacing_assign), and never waits on a
// window another transaction holds: it moves on to the next.
//
// The package knows nothing of payments: an event is an id and a time.
package pacing
