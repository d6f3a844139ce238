package chaos

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/schema"
)

func TestMain(m *testing.M) { pgtest.Main(m, schema.Schema()) }

// TestFaultCheck: a run passes only when every planned fault was
// injected during the drain, with enough kills, and undone.
func TestFaultCheck(t *testing.T) {
	t.Parallel()
	all := func(kills int) []injected {
		var fs []injected
		for range kills {
			fs = append(fs, injected{kind: faultKill, detail: "exec-1"})
		}
		for _, k := range faultKinds[1:] {
			fs = append(fs, injected{kind: k})
		}
		return fs
	}
	without := func(fs []injected, kind string) []injected {
		var out []injected
		for _, f := range fs {
			if f.kind != kind {
				out = append(out, f)
			}
		}
		return out
	}
	late := all(10)
	late[len(late)-1].afterDrain = true
	lateKills := all(10)
	lateKills[0].afterDrain = true
	failed := all(10)
	failed[12].err = errors.New("PostgreSQL did not start again")
	for _, tc := range []struct {
		name   string
		faults []injected
		ok     bool
		detail string
	}{
		{"every fault, enough kills", all(10), true, "10 kills during the drain (at least 10 wanted), 0 after it"},
		{"too few kills", all(9), false, "9 kills during the drain"},
		{"a kill after the drain does not count", lateKills, false, "9 kills during the drain (at least 10 wanted), 1 after it"},
		{"a fault missing", without(all(10), faultTemporal), false, "not injected: " + faultTemporal},
		{"a fault after the drain", late, false, "only after the last payment settled"},
		{"a fault not undone", failed, false, "failed: " + faultKinds[3] + ": PostgreSQL did not start again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := faultCheck(Options{MinKills: 10}, tc.faults)
			if c.OK != tc.ok || !strings.Contains(c.Detail, tc.detail) {
				t.Errorf("got ok=%v %q; want ok=%v and %q", c.OK, c.Detail, tc.ok, tc.detail)
			}
		})
	}
}

// TestAuditTrails replays queue items' audit rows and finds each kind of
// broken trail: a transition without its row, a trail that stops short of
// the item's status, a claim without its batch's row, an item never
// enqueued, by its own row or its chunk's.
func TestAuditTrails(t *testing.T) {
	t.Parallel()
	type audit struct{ id, batch, before, after string } // id "" is a batch's row
	enq := func(id string) audit { return audit{id, "", "", "READY"} }
	chunk := func(init string) audit { return audit{"", init, "", "READY"} }
	claim := func(batch string) audit { return audit{"", batch, "READY", "CLAIMED"} }
	for _, tc := range []struct {
		name                string
		status, batch, init string
		audits              []audit
		broken              bool
	}{
		{"whole trail", "COMPLETED", "b1", "", []audit{enq("x"), claim("b1"), {"x", "b1", "CLAIMED", "DISPATCHED"}, {"x", "b1", "DISPATCHED", "COMPLETED"}}, false},
		{"released and claimed again", "DISPATCHED", "b2", "", []audit{enq("x"), claim("b1"), {"x", "b1", "CLAIMED", "READY"}, claim("b2"), {"x", "b2", "CLAIMED", "DISPATCHED"}}, false},
		{"claimed, not yet dispatched", "CLAIMED", "b1", "", []audit{enq("x"), claim("b1")}, false},
		{"enqueued with its chunk", "COMPLETED", "b1", "init-1", []audit{chunk("init-1"), claim("b1"), {"x", "b1", "CLAIMED", "DISPATCHED"}, {"x", "b1", "DISPATCHED", "COMPLETED"}}, false},
		{"another chunk's row", "CLAIMED", "b1", "init-1", []audit{chunk("init-2"), claim("b1")}, true},
		{"dispatch not audited", "COMPLETED", "b1", "", []audit{enq("x"), claim("b1"), {"x", "b1", "DISPATCHED", "COMPLETED"}}, true},
		{"trail stops short", "COMPLETED", "b1", "", []audit{enq("x"), claim("b1"), {"x", "b1", "CLAIMED", "DISPATCHED"}}, true},
		{"claim without its batch's row", "DISPATCHED", "b1", "", []audit{enq("x"), {"x", "b1", "CLAIMED", "DISPATCHED"}}, true},
		{"never enqueued", "READY", "", "", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t)
			ctx := context.Background()
			if _, err := pool.Exec(ctx, `INSERT INTO exec_queue (item_type, item_id, queue_status, scheduled_exec_time, dispatch_batch_id, init_workflow_id)
				VALUES ($1, 'x', $2, now(), nullif($3, ''), nullif($4, ''))`, payment.ItemType, tc.status, tc.batch, tc.init); err != nil {
				t.Fatal(err)
			}
			for _, a := range tc.audits {
				if _, err := pool.Exec(ctx, `INSERT INTO dispatch_audit_log (item_type, item_id, batch_id, action, status_before, status_after)
					VALUES ($1, nullif($2, ''), nullif($3, ''), CASE WHEN $4 = '' THEN 'ENQUEUED' ELSE $5 END, nullif($4, ''), $5)`,
					payment.ItemType, a.id, a.batch, a.before, a.after); err != nil {
					t.Fatal(err)
				}
			}
			items, broken, first, err := auditTrails(ctx, pool)
			if err != nil {
				t.Fatal(err)
			}
			if items != 1 || (broken == 1) != tc.broken {
				t.Errorf("items %d, broken %d (%s); want 1 item, broken %v", items, broken, first, tc.broken)
			}
		})
	}
}
