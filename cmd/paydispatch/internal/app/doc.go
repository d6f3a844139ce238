// Package app wires paydispatch's parts together: the payment workers, the
// dispatcher (schedule or lease mode) and the intake service, on a store
// and a Temporal connection; the outbox relayer with its rail adapters,
// and the rail simulator serve embeds when no rail is configured. The
// commands in cmd/paydispatch and the benchmarks start the same parts
// through it, so a benchmark measures what serve runs.
package app
