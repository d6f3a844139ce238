package money

import (
	"math/rand/v2"
	"testing"

	"github.com/shopspring/decimal"
)

// TestBelowMaxIsLessThan: the shortcut answers as the comparison does,
// around every power of ten and at random.
func TestBelowMaxIsLessThan(t *testing.T) {
	t.Parallel()
	var ds []decimal.Decimal
	for exp := int32(-12); exp <= 3; exp++ {
		for k := int64(1); k <= 1e18; k *= 10 {
			for _, c := range []int64{k - 1, k, k + 1, -k} {
				ds = append(ds, decimal.New(c, exp))
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10_000 {
		ds = append(ds, decimal.New(r.Int64N(1e18), -r.Int32N(13)))
	}
	for _, d := range ds {
		if got, want := belowMax(d), d.LessThan(MaxAmount); got != want {
			t.Errorf("belowMax(%s × 10^%d) = %v, want %v", d.Coefficient(), d.Exponent(), got, want)
		}
	}
}
