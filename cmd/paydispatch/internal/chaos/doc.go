// Package chaos is the fault-injection suite behind `paydispatch chaos`:
// it runs the roles as OS processes of the paydispatch binary against one
// PostgreSQL, one Temporal server process and the rail simulator, drains
// the demo's payments (package demo) through them while it kills role
// processes, stops Temporal, restarts PostgreSQL, breaks the rail and
// flips the operator's switches, then checks that no payment was lost,
// executed twice or delivered twice, and that the ledger balances.
//
// A seed decides the schedule (which process, when, in what order), so a
// failing run can be replayed; the processes' timing still varies.
package chaos
