// Package fuzzcost bounds what one decode of outside input may cost, for
// the fuzz tests of every decoder: time and allocations linear in the
// input's size. A decoder whose cost grows faster (a number rescaled to
// its exponent, a backtracking pattern, a quadratic scan) exceeds the
// bound on inputs of a few kilobytes, which the fuzzer finds.
package fuzzcost

import (
	"testing"
	"time"
)

// Bound is the cost allowed an input of n bytes: a base, plus so much a
// byte.
type Bound struct {
	BaseTime, TimePerByte     time.Duration
	BaseAllocs, AllocsPerByte float64
}

// Default is generous for a slow, shared machine, yet far below what a
// cost growing faster than the input reaches on a few kilobytes.
var Default = Bound{BaseTime: 10 * time.Millisecond, TimePerByte: 20 * time.Microsecond, BaseAllocs: 100, AllocsPerByte: 2}

// Check fails t when f, the decode of an input of n bytes, costs more than
// b allows. The time is the least of three runs: a shared machine only
// ever adds to a run's time (another process, a collection), so the least
// is the decoder's own.
func (b Bound) Check(t testing.TB, n int, f func()) {
	t.Helper()
	allocs := testing.AllocsPerRun(1, f)
	took := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		f()
		took = min(took, time.Since(start))
	}
	if limit := b.BaseTime + time.Duration(n)*b.TimePerByte; took > limit {
		t.Fatalf("%d bytes took %v, over %v", n, took, limit)
	}
	if limit := b.BaseAllocs + b.AllocsPerByte*float64(n); allocs > limit {
		t.Fatalf("%d bytes made %.0f allocations, over %.0f", n, allocs, limit)
	}
}
