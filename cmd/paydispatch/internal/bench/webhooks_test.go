package bench

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestCheckArrivals(t *testing.T) {
	t.Parallel()
	ids := make([]uuid.UUID, 9)
	for i := range ids {
		ids[i] = uuid.New()
	}
	at := func(seqs ...int) map[uuid.UUID]arrival {
		m := map[uuid.UUID]arrival{}
		for i, s := range seqs {
			if s >= 0 {
				m[ids[i]] = arrival{Seq: s}
			}
		}
		return m
	}
	expected := map[string][]uuid.UUID{"a": ids[0:3], "b": ids[3:6], "c": ids[6:9]}
	for _, tt := range []struct {
		name     string
		arrivals map[uuid.UUID]arrival
		want     arrivalCheck
		good     int
	}{
		{"all in order, interleaved", at(0, 3, 6, 1, 4, 7, 2, 5, 8), arrivalCheck{Payments: 3, Events: 9}, 3},
		{"one missing", at(0, 1, 2, 3, 4, 5, 6, -1, 8), arrivalCheck{Payments: 3, Events: 9, Missing: 1, PaymentsMissing: 1}, 2},
		{"the second before the first", at(1, 0, 2, 3, 4, 5, 6, 7, 8), arrivalCheck{Payments: 3, Events: 9, OutOfOrder: 1, PaymentsOutOfOrder: 1}, 2},
		{"the last first: two arrived after it", at(7, 8, 6, 3, 4, 5, 0, 1, 2), arrivalCheck{Payments: 3, Events: 9, OutOfOrder: 1, PaymentsOutOfOrder: 1}, 2},
		{"missing and out of order in one payment", at(2, 1, -1, 3, 4, 5, 6, 7, 8),
			arrivalCheck{Payments: 3, Events: 9, Missing: 1, OutOfOrder: 1, PaymentsMissing: 1, PaymentsOutOfOrder: 1, PaymentsBoth: 1}, 2},
		{"nothing arrived", at(-1, -1, -1, -1, -1, -1, -1, -1, -1), arrivalCheck{Payments: 3, Events: 9, Missing: 9, PaymentsMissing: 3}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := checkArrivals(expected, tt.arrivals)
			if got != tt.want {
				t.Errorf("checkArrivals = %+v, want %+v", got, tt.want)
			}
			if got.good() != tt.good {
				t.Errorf("good = %d, want %d", got.good(), tt.good)
			}
			if got.ok() != (tt.good == 3) {
				t.Errorf("ok = %v with %d of 3 payments good", got.ok(), tt.good)
			}
		})
	}
}

func TestLastEventLagAndRate(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 28, 16, 0, 0, 0, time.UTC)
	arrivals := map[uuid.UUID]arrival{
		uuid.New(): {At: t0.Add(2 * time.Second)},
		uuid.New(): {At: t0.Add(12 * time.Second)},
		uuid.New(): {At: t0},
		uuid.New(): {At: t0.Add(7 * time.Second)},
	}
	for _, tt := range []struct {
		name      string
		lastFinal time.Time
		want      time.Duration
	}{
		{"after the last payment", t0.Add(9 * time.Second), 3 * time.Second},
		{"all in before it", t0.Add(15 * time.Second), -3 * time.Second},
	} {
		if got := lastEventLag(tt.lastFinal, arrivals); got != tt.want {
			t.Errorf("%s: lag %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := lastEventLag(t0, nil); got != 0 {
		t.Errorf("lag with nothing received %v, want 0", got)
	}
	first, last := arrivalSpan(arrivals)
	if !first.Equal(t0) || !last.Equal(t0.Add(12*time.Second)) {
		t.Errorf("span %v..%v, want %v..%v", first, last, t0, t0.Add(12*time.Second))
	}
	if got := eventRate(len(arrivals), first, last); got != 4.0/12 {
		t.Errorf("rate %v, want 4 events over 12 s", got)
	}
	if got := eventRate(1, t0, t0); got != 0 {
		t.Errorf("rate over no time %v, want 0", got)
	}
	if got := countSince(arrivals, t0.Add(2*time.Second)); got != 3 {
		t.Errorf("countSince = %d, want 3 (at or after)", got)
	}
	for d, want := range map[time.Duration]int{0: 0, 999 * time.Millisecond: 0, time.Second: 1, -time.Millisecond: -1, -time.Second: -1, -1001 * time.Millisecond: -2} {
		if got := floorSeconds(d); got != want {
			t.Errorf("floorSeconds(%v) = %d, want %d", d, got, want)
		}
	}
}
