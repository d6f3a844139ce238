package bench

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestWebhookTail(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	a, b, c, d, e := uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New()
	// Payment p: a refused twice (1 s and 2 s of backoff), b behind it,
	// c refused once. Payment q: d straight through; e never arrived.
	expected := map[string][]uuid.UUID{"p": {a, b, c}, "q": {d, e}}
	arrivals := map[uuid.UUID]arrival{
		a: {At: ms(3100), CreatedAt: ms(0), Type: "payment.accepted"},
		b: {At: ms(3200), CreatedAt: ms(500), Type: "payment.processing"},
		c: {At: ms(4500), CreatedAt: ms(600), Type: "payment.delivered"},
		d: {At: ms(2200), CreatedAt: ms(2000), Type: "payment.accepted"},
	}
	reqs := map[uuid.UUID][]request{
		// Out of order on purpose: the helper sorts them by time.
		a: {{At: ms(1100), Refused: true}, {At: ms(100), Refused: true}, {At: ms(3100)}},
		b: {{At: ms(3200)}},
		// A duplicate after the accepted one is not an attempt.
		c: {{At: ms(3500), Refused: true}, {At: ms(4500)}, {At: ms(4600)}},
		d: {{At: ms(2200)}},
		e: {{At: ms(2300), Refused: true}},
	}
	for _, tt := range []struct {
		name           string
		ids            []uuid.UUID
		j              int
		ok             bool
		attempts       int
		chain          []int
		gaps           []time.Duration
		total, backoff time.Duration
		queued         time.Duration
	}{
		{"behind a retried event, then retried itself", expected["p"], 2, true, 2, []int{3, 1, 2}, []time.Duration{time.Second},
			3900 * time.Millisecond, 3500 * time.Millisecond, 400 * time.Millisecond},
		{"behind a retried event: its backoff from this one's publication", expected["p"], 1, true, 1, []int{3, 1}, nil,
			2700 * time.Millisecond, 2600 * time.Millisecond, 100 * time.Millisecond},
		{"retried twice", expected["p"], 0, true, 3, []int{3}, []time.Duration{time.Second, 2 * time.Second},
			3100 * time.Millisecond, 3000 * time.Millisecond, 100 * time.Millisecond},
		{"straight through: all queued", expected["q"], 0, true, 1, []int{1}, nil,
			200 * time.Millisecond, 0, 200 * time.Millisecond},
		{"not arrived", expected["q"], 1, false, 0, nil, nil, 0, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := timeEvent(tt.ids, tt.j, arrivals, reqs)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if got.Attempts != tt.attempts || !slices.Equal(got.Chain, tt.chain) || !slices.Equal(got.Gaps, tt.gaps) {
				t.Errorf("attempts %d chain %v gaps %v, want %d %v %v", got.Attempts, got.Chain, got.Gaps, tt.attempts, tt.chain, tt.gaps)
			}
			if got.Total != tt.total || got.Backoff != tt.backoff || got.Queued != tt.queued {
				t.Errorf("total %v backoff %v queued %v, want %v %v %v", got.Total, got.Backoff, got.Queued, tt.total, tt.backoff, tt.queued)
			}
		})
	}

	lastFinal := ms(3150)
	r := webhookTail(expected, arrivals, reqs, lastFinal, 2)
	if len(r.Last) != 2 || r.Last[0].ID != c || r.Last[1].ID != b || r.Last[0].Subject != "p" {
		t.Fatalf("the last two: %+v, want c then b of p", r.Last)
	}
	if r.After != 2 || r.Retried != 2 || r.Backoff != 6100*time.Millisecond || r.Queued != 500*time.Millisecond || r.Oldest != 3900*time.Millisecond {
		t.Errorf("after the last payment: %d events, %d retried, backoff %v, queued %v, oldest %v; want 2, 2, 6.1s, 500ms, 3.9s",
			r.After, r.Retried, r.Backoff, r.Queued, r.Oldest)
	}
	var out bytes.Buffer
	r.print(&out, lastFinal)
	for _, want := range []string{
		"2 events arrived after the last payment's final status, 2 with a refused attempt",
		"+1.35 s  payment.delivered    attempts 2 (3,1,2)  3.90 s: backoff 3.50 s, queued 0.40 s  gaps 1.00 s",
		"+0.05 s  payment.processing   attempts 1 (3,1)  2.70 s: backoff 2.60 s, queued 0.10 s  gaps - s",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}
