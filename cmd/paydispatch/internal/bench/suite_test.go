package bench

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestFiguresRatio(t *testing.T) {
	t.Parallel()
	figs := &Figures{}
	figs.add(Figure{What: "intake", Value: 12000, BaseVal: 60000})
	figs.add(Figure{What: "a time", Value: 3, BaseVal: 6, Ratio: 2})
	figs.add(Figure{What: "no baseline", Value: 5})
	got := figs.List()
	for i, want := range []float64{0.2, 2, 0} {
		if got[i].Ratio != want {
			t.Errorf("%s: ratio %v, want %v", got[i].What, got[i].Ratio, want)
		}
	}
	var none *Figures
	none.add(Figure{Value: 1, BaseVal: 1}) // dropped, no panic
}

func TestFigureNum(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {0.0123, "0.0123"}, {1.5, "1.5"}, {25, "25"}, {99.94, "99.9"},
		{100, "100"}, {456.4, "456"}, {999.4, "999"}, {1000, "1,000"}, {13943.6, "13,944"}, {1234567.2, "1,234,567"},
	} {
		if got := figureNum(tc.v); got != tc.want {
			t.Errorf("figureNum(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestSuiteTable(t *testing.T) {
	t.Parallel()
	rows := []suiteRow{
		{bench: "intake", fig: Figure{What: "20,000 payments", Value: 11080.4, Unit: "payments/s", Baseline: "COPY", BaseVal: 55402, BaseUnit: "rows/s", Ratio: 0.2},
			steal: 0.012, took: 61 * time.Second},
		{bench: "drain", steal: -1, took: 3 * time.Second, err: errors.New("a | in the error")},
	}
	got := suiteTable(rows, 2, true)
	for _, want := range []string{
		"Machine: 2 cores, ",
		"; quick runs; ",
		"| intake | 20,000 payments: 11,080 payments/s | COPY: 55,402 rows/s | 0.2 × | 1 % | 61 s |\n",
		"| drain | failed: a / in the error | | | unknown | 3 s |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
}
