package main

import (
	"runtime/debug"
	"testing"
)

// TestTuneGC: with neither GOGC nor GOMEMLIMIT set, the collector runs at
// 400 % under a 4 GiB soft limit; an operator's setting is left alone.
// Not parallel: the collector's settings are the process's.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	tuneGC(func(string) string { return "" })
	if got := debug.SetGCPercent(-1); got != defaultGCPercent {
		t.Fatalf("GC percent %d, want %d", got, defaultGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != defaultMemoryLimit {
		t.Fatalf("memory limit %d, want %d", got, defaultMemoryLimit)
	}
	debug.SetGCPercent(150)
	debug.SetMemoryLimit(1 << 40)
	tuneGC(func(k string) string { return map[string]string{"GOGC": "150", "GOMEMLIMIT": "1TiB"}[k] })
	if got := debug.SetGCPercent(-1); got != 150 {
		t.Fatalf("GOGC=150 set by the operator became %d", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Fatalf("GOMEMLIMIT set by the operator became %d", got)
	}
}
