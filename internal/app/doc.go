// Package app wires paydispatch's parts together: the payment workers, the
// dispatcher (schedule or lease mode) and the intake service, on a store
// and a Temporal connection. The commands in cmd/paydispatch and the
// pipeline benchmark start the same parts through it, so a benchmark
// measures what serve runs.
package app
