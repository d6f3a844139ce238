package chaos

import (
	"testing"
	"time"
)

func TestKillWindow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		payments, rate int
		want           time.Duration
	}{
		{1500, 15, 230 * time.Second},
		{300, 100, 36 * time.Second},
		{1000, 0, 30 * time.Second},
	} {
		if got := killWindow(Options{Payments: c.payments, Rate: c.rate}); got != c.want {
			t.Errorf("killWindow(%d at %d/s) = %s, want %s", c.payments, c.rate, got, c.want)
		}
	}
}
