package payment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/txdetail"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// fullRequest is a valid request with every field set, each to a value of
// its own: every detail to its example, i in the id.
func fullRequest(t *testing.T, at time.Time, i int) payment.Request {
	t.Helper()
	r := validRequest(at)
	r.PaymentID = fmt.Sprintf("full-%03d", i)
	r.Rail, r.Priority = "DEFAULT", payment.PriorityHigh
	for _, f := range txdetail.Fields {
		f.Set(&r.Details, f.Example())
	}
	members := flat(t, r)
	for _, f := range payment.RequestFields() {
		if _, ok := members[f.Path()]; !ok {
			t.Fatalf("fullRequest leaves %s empty: give it a value", f.Path())
		}
	}
	return r
}

// flat is v's JSON as its members' paths ("creditor.iban") and values.
func flat(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				walk(prefix+k+".", sub)
				continue
			}
			out[prefix+k] = v
		}
	}
	walk("", m)
	return out
}

// sameRequest fails naming each field of want that got lost or changed
// on the way through shape.
func sameRequest(t *testing.T, shape string, got, want payment.Request) {
	t.Helper()
	got.RequestedExecutionTime, want.RequestedExecutionTime = got.RequestedExecutionTime.UTC(), want.RequestedExecutionTime.UTC()
	g, w := flat(t, got), flat(t, want)
	for _, path := range slices.Sorted(maps.Keys(w)) {
		if g[path] != w[path] {
			t.Errorf("%s: %s is %v, want %v", shape, path, g[path], w[path])
		}
	}
}

// TestDecodePlainTakesEveryField: the one-pass decoder, not strictjson,
// takes a payment with every field of Request set, and reads each as
// encoding/json does: a field added to Request (or to txdetail.Details)
// is taken without a hand-written case, and no field limit sends a
// payment to the slow decoder.
func TestDecodePlainTakesEveryField(t *testing.T) {
	t.Parallel()
	want := fullRequest(t, time.Date(2030, 1, 1, 16, 0, 0, 0, time.UTC), 1)
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := payment.DecodePlain(b)
	if !ok {
		t.Fatalf("decodePlain left it to strictjson: %s", b)
	}
	sameRequest(t, "decodePlain", got, want)
}

// TestValidateChecksEveryField: each text field of Request, given a value
// no rule lets through (a control character, 300 bytes), is refused with
// an error naming it, and each time field left zero: a field added
// without a rule fails here.
func TestValidateChecksEveryField(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 15, 55, 0, 0, time.UTC)
	bad := "\x01" + strings.Repeat("x", 300)
	for _, f := range payment.RequestFields() {
		t.Run(f.Path(), func(t *testing.T) {
			t.Parallel()
			r := validRequest(now)
			if f.IsTime() {
				f.SetTime(&r, time.Time{})
			} else {
				f.Set(&r, bad)
			}
			_, err := payment.Validate(r, now)
			inv, ok := err.(*field.Invalid)
			if !ok || !inv.Has(f.Path()) {
				t.Fatalf("Validate: %v; want an error naming %s", err, f.Path())
			}
		})
	}
}

// carried is where each field of a request reaches its rail's instruction
// (its path there), or "" where it does not (the time and the rail decide
// when and where it is sent; the priority its place in the queue). A
// detail is carried under its own name.
var carried = map[string]string{
	"paymentId": "endToEndId", "tenantId": "tenantId", "debtorAccount": "debtor.account",
	"amount": "amount", "currency": "currency", "creditor.name": "creditor.name", "creditor.iban": "creditor.iban",
	"creditor.bic": "creditor.bic", "remittanceInfo": "remittanceInfo",
	"requestedExecutionTime": "", "rail": "", "priority": "",
}

// TestEveryFieldSurvivesTheJourney pushes payments with every field set
// through each shape a payment takes, and compares field by field:
// decoded from JSON, validated, staged in an intake row and read back, found
// while it waits, stored by Phase A (a statement for a few, a COPY for a
// chunk), read back stored and as its context, the saga's state (through
// its JSON, as Temporal keeps it), and the rail's instruction. A field
// dropped by any of them fails the test, named.
func TestEveryFieldSurvivesTheJourney(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 120} {
		t.Run(fmt.Sprintf("%d payments", n), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := newPool(t)
			s := payment.NewStore(pool)
			now := time.Now().Truncate(time.Second)
			at := now.Add(time.Hour)
			wf := fmt.Sprintf("init-journey-%d", n)
			want := make([]payment.Request, n)
			rs := make([]payment.Request, n)
			for i := range rs {
				want[i] = fullRequest(t, at, i)
				b, err := json.Marshal(want[i])
				if err != nil {
					t.Fatal(err)
				}
				if rs[i], err = payment.DecodeRequest(b); err != nil {
					t.Fatal(err)
				}
				sameRequest(t, "DecodeRequest", rs[i], want[i])
				if _, err := payment.Validate(rs[i], now); err != nil {
					t.Fatal(err)
				}
			}
			rcs, err := s.Receive(ctx, rs, func(int) string { return wf }, false)
			if err != nil || !rcs[0].Fresh {
				t.Fatalf("Receive: %+v %v", rcs, err)
			}
			staged, err := payment.IntakeOf(ctx, s, wf)
			if err != nil || len(staged) != n {
				t.Fatalf("intake: %d, %v", len(staged), err)
			}
			sameRequest(t, "the intake row", staged[0], want[0])
			waiting, err := s.Find(ctx, want[0].TenantID, want[0].PaymentID)
			if err != nil {
				t.Fatal(err)
			}
			sameRequest(t, "a payment waiting for Phase A", waiting.Request, want[0])
			if rcs, err := s.Receive(ctx, rs[:1], func(int) string { return wf }, false); err != nil || rcs[0].Fresh || rcs[0].Conflict {
				t.Fatalf("sent again while it waits: %+v %v; want a replay", rcs, err)
			}

			a := payment.NewInitActivities(payment.InitConfig{Store: s, Queue: queue.New(pool), Rails: routing.NewResolver(pool, routing.ResolverConfig{})})
			if res, err := a.InitIntake(ctx, wf); err != nil || res.Scheduled != n {
				t.Fatalf("Phase A: %+v %v", res, err)
			}
			stored, err := s.Find(ctx, want[0].TenantID, want[0].PaymentID)
			if err != nil {
				t.Fatal(err)
			}
			sameRequest(t, "the stored payment", stored.Request, want[0])
			if rcs, err := s.Receive(ctx, rs[:1], func(int) string { return wf }, false); err != nil || rcs[0].Fresh || rcs[0].Conflict {
				t.Fatalf("sent again once stored: %+v %v; want a replay", rcs, err)
			}
			pc, err := s.Context(ctx, stored.Key)
			if err != nil {
				t.Fatal(err)
			}
			sameRequest(t, "the stored context", pc.Request, want[0])

			b, err := json.Marshal(payment.SubmitData(stored.Key, pc, at))
			if err != nil {
				t.Fatal(err)
			}
			var st payment.SubmitState
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatal(err)
			}
			in, err := payment.InstructionOf(st, decimal.RequireFromString(want[0].Amount))
			if err != nil {
				t.Fatal(err)
			}
			got, sent := flat(t, in), flat(t, want[0])
			for _, f := range payment.RequestFields() {
				path, ok := carried[f.Path()]
				if _, detail := txdetail.ByName(f.Path()); detail {
					path, ok = f.Path(), true
				}
				switch {
				case !ok:
					t.Errorf("%s: say in carried where the instruction has it, or that it has not", f.Path())
				case path != "" && got[path] != sent[f.Path()]:
					t.Errorf("the instruction's %s is %v, want the request's %s, %v", path, got[path], f.Path(), sent[f.Path()])
				}
			}
		})
	}
}
