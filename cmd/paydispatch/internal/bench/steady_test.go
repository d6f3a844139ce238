package bench

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
)

func TestSizesAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		payments, flag, want int
		wantErr              string
	}{
		{payments: 200_000, want: 50_000},
		{payments: 6000, want: 1500},
		{payments: 3, want: 1},
		{payments: 200_000, flag: 10_000, want: 10_000},
		{payments: 200_000, flag: 200_000, want: 200_000},
		{payments: 6000, flag: 6001, wantErr: "--sizes-after 6001: more than the 6000 payments"},
	}
	for _, tt := range tests {
		got, err := sizesAfter(tt.payments, tt.flag)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("sizesAfter(%d, %d) err = %v, want %q", tt.payments, tt.flag, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("sizesAfter(%d, %d) = %d, %v, want %d", tt.payments, tt.flag, got, err, tt.want)
		}
	}
}

func TestSizesDue(t *testing.T) {
	t.Parallel()
	instant := time.Date(2026, 11, 28, 16, 0, 0, 0, time.UTC)
	tests := []struct {
		n    int
		rate float64
		want time.Duration
	}{
		{50_000, 1000, 50 * time.Second},
		{1500, 100, 15 * time.Second},
		{5000, 25, 200 * time.Second},
		{1, 4, 250 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := sizesDue(instant, tt.n, tt.rate).Sub(instant); got != tt.want {
			t.Errorf("sizesDue(%d at %v/s) = +%v, want +%v", tt.n, tt.rate, got, tt.want)
		}
	}
}

func TestHeldAtSteady(t *testing.T) {
	t.Parallel()
	tests := []struct {
		retention, interval time.Duration
		rate                float64
		want                int
	}{
		{time.Minute, 15 * time.Second, 1000, 75_000},
		{2 * time.Minute, 15 * time.Second, 250, 33_750},
		{10 * time.Second, 5 * time.Second, 100, 1500},
		{10 * time.Second, time.Second, 2.5, 28}, // 27.5 rounds up
	}
	for _, tt := range tests {
		if got := heldAtSteady(tt.retention, tt.interval, tt.rate); got != tt.want {
			t.Errorf("heldAtSteady(%v, %v, %v/s) = %d, want %d", tt.retention, tt.interval, tt.rate, got, tt.want)
		}
	}
}

func TestCompareSizes(t *testing.T) {
	t.Parallel()
	first := tableSizes{"payments": 100, "account": 8, "exec_queue": 50, "process_log": 30, "api_tokens": 8}
	end := tableSizes{"payments": 400, "account": 8, "exec_queue": 55, "process_log": 70, "pacing_slot": 4}
	c := compareSizes(first, end, []string{"payments", "account"})
	if c.Money != (tableGrowth{First: 108, End: 408}) {
		t.Errorf("money = %+v, want 108 → 408", c.Money)
	}
	if c.NonMoney != (tableGrowth{First: 88, End: 129}) {
		t.Errorf("not money = %+v, want 88 → 129 (a table in one sample counts 0 in the other)", c.NonMoney)
	}
	var order []string
	for _, g := range c.Tables {
		order = append(order, g.Table)
	}
	if want := []string{"process_log", "exec_queue", "pacing_slot", "api_tokens"}; !slices.Equal(order, want) {
		t.Errorf("tables = %v, want the largest at the end first %v", order, want)
	}
}

func TestTableGrowthRatio(t *testing.T) {
	t.Parallel()
	tests := []struct {
		g     tableGrowth
		ratio float64
		text  string
		flat  bool
	}{
		{tableGrowth{First: 100, End: 120}, 1.2, "1.20×", true},
		{tableGrowth{First: 100, End: 121}, 1.21, "1.21×", false},
		{tableGrowth{First: 100, End: 80}, 0.8, "0.80×", true},
		{tableGrowth{First: 100, End: 79}, 0.79, "0.79×", false},
		{tableGrowth{First: 100, End: 400}, 4, "4.00×", false},
		{tableGrowth{First: 0, End: 10}, math.Inf(1), "new", false},
		{tableGrowth{}, 1, "1.00×", true},
	}
	for _, tt := range tests {
		if got := tt.g.ratio(); math.Abs(got-tt.ratio) > 1e-9 && !(math.IsInf(got, 1) && math.IsInf(tt.ratio, 1)) {
			t.Errorf("%+v ratio = %v, want %v", tt.g, got, tt.ratio)
		}
		if got := tt.g.ratioText(); got != tt.text {
			t.Errorf("%+v ratioText = %q, want %q", tt.g, got, tt.text)
		}
		if got := tt.g.flat(); got != tt.flat {
			t.Errorf("%+v flat = %v, want %v", tt.g, got, tt.flat)
		}
	}
}

func TestByTable(t *testing.T) {
	t.Parallel()
	if got, want := byTable(map[string]int64{"exec_queue": 150_000, "pacing_slot": 150_000, "process_instance": 20, "pacing_window": 0}),
		"exec_queue 150,000, pacing_slot 150,000, process_instance 20"; got != want {
		t.Errorf("byTable = %q, want %q", got, want)
	}
	if got := byTable(map[string]int64{"exec_queue": 0}); got != "none" {
		t.Errorf("byTable of zeros = %q, want none", got)
	}
}

func TestParseStatusKiB(t *testing.T) {
	t.Parallel()
	status := "Name:\tpaydispatch\nVmPeak:\t 2000000 kB\nVmHWM:\t  451234 kB\nVmRSS:\t  300000 kB\n"
	tests := []struct {
		status, name string
		want         int64
	}{
		{status, "VmHWM", 451234},
		{status, "VmRSS", 300000},
		{status, "VmSwap", 0},
		{"VmHWM:\tlots kB\n", "VmHWM", 0},
		{"VmHWM:\t12 MB\n", "VmHWM", 0},
	}
	for _, tt := range tests {
		if got := parseStatusKiB(tt.status, tt.name); got != tt.want {
			t.Errorf("parseStatusKiB(%q, %s) = %d, want %d", tt.status, tt.name, got, tt.want)
		}
	}
}

// TestReadTableSizes: a partitioned table's partitions count under its
// name, heap, indexes and TOAST together.
func TestReadTableSizes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewEmptyPool(t)
	ctx := context.Background()
	for _, stmt := range []string{
		`CREATE TABLE plain (id bigint PRIMARY KEY, note text)`,
		`INSERT INTO plain SELECT g, repeat('x', 100) FROM generate_series(1, 2000) g`,
		`CREATE TABLE parted (at date NOT NULL, id bigint) PARTITION BY RANGE (at)`,
		`CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM ('2026-01-01') TO ('2026-02-01')`,
		`CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM ('2026-02-01') TO ('2026-03-01')`,
		`CREATE INDEX ON parted (id)`,
		`INSERT INTO parted SELECT date '2026-01-01' + (g % 50), g FROM generate_series(1, 5000) g`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readTableSizes(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	var want1, want2, wantPlain int64
	if err := pool.QueryRow(ctx, `SELECT pg_total_relation_size('parted_1'), pg_total_relation_size('parted_2'), pg_total_relation_size('plain')`).Scan(&want1, &want2, &wantPlain); err != nil {
		t.Fatal(err)
	}
	if want1 == 0 || want2 == 0 {
		t.Fatalf("partitions of %d and %d bytes: the test wants rows in both", want1, want2)
	}
	if got["parted"] != want1+want2 || got["plain"] != wantPlain || len(got) != 2 {
		t.Errorf("sizes = %v, want parted %d (its partitions') and plain %d, nothing else", got, want1+want2, wantPlain)
	}
	for name := range got {
		if strings.HasPrefix(name, "parted_") {
			t.Errorf("partition %s listed apart from its table", name)
		}
	}
}
