package bench

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuTimes are the machine's CPU time counters (/proc/stat, all CPUs).
type cpuTimes struct{ total, steal uint64 }

// readCPU reads them; ok is false off Linux.
func readCPU() (t cpuTimes, ok bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return t, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return parseCPU(line)
}

// parseCPU reads /proc/stat's first line: "cpu user nice system idle
// iowait irq softirq steal guest guest_nice", in ticks.
func parseCPU(line string) (t cpuTimes, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return t, false
	}
	for i, f := range fields[1:] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return t, false
		}
		if i < 8 { // user nice system idle iowait irq softirq steal (guest time is inside user)
			t.total += n
		}
		if i == 7 {
			t.steal = n
		}
	}
	return t, true
}

// stolenSince is the share of CPU time the hypervisor gave other guests
// since start: on a shared machine, the part of a slow run that was not
// ours to use.
func stolenSince(start cpuTimes) (float64, bool) {
	now, ok := readCPU()
	if !ok || now.total <= start.total {
		return 0, false
	}
	return float64(now.steal-start.steal) / float64(now.total-start.total), true
}

// processCPU is the CPU time (user and system) this process has used; zero
// where the platform does not say.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
