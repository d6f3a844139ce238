package bench

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuTimes are the machine's CPU time counters (/proc/stat, all CPUs).
type cpuTimes struct{ total, idle, steal uint64 }

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
		switch i {
		case 3, 4: // idle, iowait
			t.idle += n
		case 7:
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

// busySince is the CPU time the machine's CPUs spent working (not idle,
// not waiting for I/O, not stolen) since start: this process, PostgreSQL
// and anything else running. /proc/stat counts in USER_HZ ticks, 100 a
// second on Linux.
func busySince(start cpuTimes) time.Duration {
	now, ok := readCPU()
	if !ok {
		return 0
	}
	ticks := (now.total - start.total) - (now.idle - start.idle) - (now.steal - start.steal)
	return time.Duration(ticks) * 10 * time.Millisecond
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

// stealSampler records the share of CPU stolen in each second of a run.
type stealSampler struct {
	prev     cpuTimes
	ok       bool
	bySecond map[int]float64
}

func newStealSampler() *stealSampler {
	t, ok := readCPU()
	return &stealSampler{prev: t, ok: ok, bySecond: map[int]float64{}}
}

// sample records the share stolen since the last sample against the second
// that ends at elapsed.
func (s *stealSampler) sample(elapsed time.Duration) {
	if !s.ok {
		return
	}
	cur, ok := readCPU()
	if !ok || cur.total <= s.prev.total {
		return
	}
	s.bySecond[int(elapsed/time.Second)-1] = float64(cur.steal-s.prev.steal) / float64(cur.total-s.prev.total)
	s.prev = cur
}

// stealByBand splits the sampled seconds of the drain's full seconds into
// those whose executions were as their schedule had them and those late
// says were off (with the 5 s before each: a stall shows up in the
// executions after it).
func stealByBand(stolen map[int]float64, first, last int, late func(sec int) bool) (in, out []float64) {
	outOfBand := map[int]bool{}
	for sec := first + 1; sec < last; sec++ {
		if late(sec) {
			for b := sec - 5; b <= sec; b++ {
				outOfBand[b] = true
			}
		}
	}
	for sec := first + 1; sec < last; sec++ {
		v, ok := stolen[sec]
		if !ok {
			continue
		}
		if outOfBand[sec] {
			out = append(out, v)
		} else {
			in = append(in, v)
		}
	}
	return in, out
}

// median is xs's middle value, the upper of the two middle ones for an
// even count (none: zero).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// peakRSS is this process's largest resident set so far, in bytes.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024 // kilobytes on Linux
}

// currentRSS is this process's resident set now, in bytes (0: unknown).
func currentRSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// procTimes are a process's CPU times from /proc/PID/stat, in ticks: its
// own (user + system) and its reaped children's.
type procTimes struct {
	ppid            int
	comm            string
	own, ofChildren uint64
}

// parseProcStat reads a /proc/PID/stat line: "pid (comm) state ppid ...",
// utime, stime, cutime and cstime the 14th to 17th fields. comm may hold
// spaces and parentheses: the fields start after the last ')'.
func parseProcStat(line string) (procTimes, bool) {
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return procTimes{}, false
	}
	f := strings.Fields(line[end+1:])
	if len(f) < 15 { // state ppid ... cstime: fields 3 to 17
		return procTimes{}, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procTimes{}, false
	}
	var n [4]uint64
	for i := range n {
		if n[i], err = strconv.ParseUint(f[11+i], 10, 64); err != nil {
			return procTimes{}, false
		}
	}
	return procTimes{ppid: ppid, comm: line[open+1 : end], own: n[0] + n[1], ofChildren: n[2] + n[3]}, true
}

// stackCPU is the CPU time of this process and of the PostgreSQL servers
// it started (each postmaster, with the backends it reaped and those
// alive): what a benchmark's stack used, whoever else runs on the
// machine. ok is false off Linux.
func stackCPU() (d time.Duration, ok bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	procs := map[int]procTimes{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		if p, ok := parseProcStat(string(b)); ok {
			procs[pid] = p
		}
	}
	return processCPU() + ticks(postgresTicks(procs, os.Getpid())), true
}

// postgresTicks sums the CPU ticks of the postgres processes self
// started and of everything under them.
func postgresTicks(procs map[int]procTimes, self int) uint64 {
	var sum uint64
	var under func(pid int)
	under = func(pid int) {
		for c, p := range procs {
			if p.ppid == pid {
				sum += p.own + p.ofChildren
				under(c)
			}
		}
	}
	for pid, p := range procs {
		if p.ppid == self && p.comm == "postgres" {
			sum += p.own + p.ofChildren
			under(pid)
		}
	}
	return sum
}

// ticks is a count of USER_HZ ticks as a duration (100 a second on Linux).
func ticks(n uint64) time.Duration { return time.Duration(n) * 10 * time.Millisecond }
