package main

import (
	"runtime/debug"
)

// The collector's defaults when the operator sets none: GOGC 400 with a
// 4 GiB soft memory limit. A paced drain allocates mostly short-lived
// protobufs in the embedded Temporal; at Go's default (100) the collector
// took 11 % of the process's CPU, 3.8 ms per payment, and at 400 1.0 ms,
// the whole process 4 % less (docs/performance.md). The limit makes it
// collect harder before the heap could grow past it.
const (
	defaultGCPercent   = 400
	defaultMemoryLimit = 4 << 30
)

// tuneGC applies the defaults that GOGC and GOMEMLIMIT do not override.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
}
