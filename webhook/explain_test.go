package webhook_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/webhook"
)

// TestClaimUsesIndexes: with 200,000 deliveries made and 20,000 open
// over 50 endpoints (one endpoint with a backlog of 10,000 behind a
// failing head), a claim reads the open deliveries through their partial
// indexes, never the whole table.
func TestClaimUsesIndexes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO webhook_endpoints (endpoint_id, tenant_id, url, secret)
		SELECT ('00000000-0000-7000-8000-' || lpad(e::text, 12, '0'))::uuid, 't-' || e, 'https://hooks.example/' || e, 'whsec_x'
		FROM generate_series(1, 50) e;
		INSERT INTO webhook_deliveries (endpoint_id, tenant_id, subject, event_id, event_type, payload, state, attempts, settled_at)
		SELECT ('00000000-0000-7000-8000-' || lpad((g % 50 + 1)::text, 12, '0'))::uuid, 't-' || (g % 50 + 1), 'pay-' || g,
		       gen_random_uuid(), 'payment.delivered', '{}', 'DELIVERED', 1, now()
		FROM generate_series(1, 200000) g;
		INSERT INTO webhook_deliveries (endpoint_id, tenant_id, subject, event_id, event_type, payload, next_attempt_at)
		SELECT ('00000000-0000-7000-8000-' || lpad(CASE WHEN g <= 10000 THEN '1' ELSE (g % 50 + 1)::text END, 12, '0'))::uuid,
		       't-1', 'pay-' || (g % 3000), gen_random_uuid(), 'payment.delivered', '{}',
		       CASE WHEN g <= 10000 THEN now() + interval '1 hour' ELSE now() END
		FROM generate_series(1, 20000) g;
		ANALYZE webhook_endpoints; ANALYZE webhook_deliveries`); err != nil {
		t.Fatal(err)
	}
	plan := pgtest.Plans(t, pool, false, func(ctx context.Context, tx pgx.Tx) error {
		n, err := webhook.Claim(ctx, tx, 4, 256)
		if err == nil && n == 0 {
			t.Error("the claim took nothing")
		}
		return err
	})
	if testing.Verbose() {
		t.Logf("claim:\n%s", plan)
	}
	if strings.Contains(plan, "Seq Scan on webhook_deliveries") || !strings.Contains(plan, "webhook_deliveries_due_idx") ||
		!strings.Contains(plan, "webhook_deliveries_subject_idx") {
		t.Errorf("the claim does not read the open deliveries through their indexes:\n%s", plan)
	}
}

// TestClaimBehindABurst: right after a burst of 12,000 deliveries to one
// endpoint (3,000 payments' four events each, not yet analysed, as after
// a bulk file's Phase A), a claim of 32 reads a few hundred buffers: each
// candidate's first-of-its-payment test is one descent of the subject
// index, and the claimed rows are updated by key. As a join, the planner
// scanned every open delivery of the endpoint for each candidate and the
// whole table for the update: tens of thousands of buffers, and tens of
// milliseconds a claim, which held one endpoint to about 80 events a
// second. Nor is the claim JIT-compiled, whatever its estimated cost.
func TestClaimBehindABurst(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO webhook_endpoints (endpoint_id, tenant_id, url, secret)
		VALUES ('00000000-0000-7000-8000-000000000001', 't-1', 'https://hooks.example/1', 'whsec_x');
		INSERT INTO webhook_deliveries (endpoint_id, tenant_id, subject, event_id, event_type, payload)
		SELECT '00000000-0000-7000-8000-000000000001', 't-1', 'pay-' || (g % 3000), gen_random_uuid(), 'payment.delivered', '{}'
		FROM generate_series(0, 11999) g`); err != nil {
		t.Fatal(err)
	}
	plan := pgtest.Plans(t, pool, true, func(ctx context.Context, tx pgx.Tx) error {
		// However cheap a plan, JIT would compile it: the claim must not
		// be (compiling it took ten times longer than running it).
		if _, err := tx.Exec(ctx, "SET LOCAL jit_above_cost = 0"); err != nil {
			return err
		}
		n, err := webhook.Claim(ctx, tx, 32, 1024)
		if err != nil {
			return err
		}
		if n != 32 {
			t.Errorf("the claim took %d, want 32 (one event of each of 32 payments)", n)
		}
		var jit string
		if err := tx.QueryRow(ctx, "SHOW jit").Scan(&jit); err != nil {
			return err
		}
		if jit != "off" {
			t.Errorf("the claim ran with jit %s, want off", jit)
		}
		return nil
	})
	if testing.Verbose() {
		t.Logf("claim:\n%s", plan)
	}
	if strings.Contains(plan, "JIT:") {
		t.Errorf("the claim was JIT-compiled:\n%s", plan)
	}
	m := regexp.MustCompile(`shared hit=(\d+)`).FindStringSubmatch(plan)
	if m == nil {
		t.Fatalf("no buffer counts in the plan:\n%s", plan)
	}
	if hit, _ := strconv.Atoi(m[1]); hit > 2000 {
		t.Errorf("the claim read %d buffers, want a few hundred:\n%s", hit, plan)
	}
}

// TestClaimReadsOnlyItsRoom: an endpoint's claim reads candidates only up
// to its room (its cap less its deliveries in flight). At its cap, with a
// backlog held behind the deliveries in flight (each one's payment's
// later events, due but not first), a claim reads a few buffers instead
// of stepping over the whole backlog; with room for two it stops at two
// instead of locking thirty-two candidates and dropping thirty.
func TestClaimReadsOnlyItsRoom(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name              string
		sending, heldEach int
		wantTaken         int
		maxHit            int
	}{
		{"at its cap, a backlog held behind", 32, 30, 0, 60},
		{"room for two", 30, 0, 2, 100},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t)
			ctx := context.Background()
			if _, err := pool.Exec(ctx, fmt.Sprintf(`
				INSERT INTO webhook_endpoints (endpoint_id, tenant_id, url, secret)
				VALUES ('00000000-0000-7000-8000-000000000001', 't-1', 'https://hooks.example/1', 'whsec_x');
				-- Each payment in flight: its first event SENDING, its later ones due behind it.
				INSERT INTO webhook_deliveries (endpoint_id, tenant_id, subject, event_id, event_type, payload, state, attempts, next_attempt_at)
				SELECT '00000000-0000-7000-8000-000000000001', 't-1', 'busy-' || b, gen_random_uuid(), 'payment.accepted', '{}',
				       CASE WHEN n = 0 THEN 'SENDING' ELSE 'PENDING' END, CASE WHEN n = 0 THEN 1 ELSE 0 END,
				       CASE WHEN n = 0 THEN now() + interval '1 minute' ELSE now() - interval '1 minute' END
				FROM generate_series(1, %d) b, generate_series(0, %d) n
				ORDER BY n, b;
				INSERT INTO webhook_deliveries (endpoint_id, tenant_id, subject, event_id, event_type, payload)
				SELECT '00000000-0000-7000-8000-000000000001', 't-1', 'pay-' || g, gen_random_uuid(), 'payment.accepted', '{}'
				FROM generate_series(1, 3000) g;
				ANALYZE webhook_deliveries`, tt.sending, tt.heldEach)); err != nil {
				t.Fatal(err)
			}
			plan := pgtest.Plans(t, pool, true, func(ctx context.Context, tx pgx.Tx) error {
				n, err := webhook.Claim(ctx, tx, 32, 1024)
				if err == nil && n != tt.wantTaken {
					t.Errorf("the claim took %d, want %d", n, tt.wantTaken)
				}
				return err
			})
			m := regexp.MustCompile(`shared hit=(\d+)`).FindStringSubmatch(plan)
			if m == nil {
				t.Fatalf("no buffer counts in the plan:\n%s", plan)
			}
			if hit, _ := strconv.Atoi(m[1]); hit > tt.maxHit {
				t.Errorf("the claim read %d buffers, want at most %d:\n%s", hit, tt.maxHit, plan)
			}
		})
	}
}

// TestRetryUsesIndexes: recording a failure, which moves its subject's
// later deliveries behind it, finds them through the subject index,
// never by reading the whole table (200,000 delivered, 20,000 open).
func TestRetryUsesIndexes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO webhook_endpoints (endpoint_id, tenant_id, url, secret)
		VALUES ('00000000-0000-7000-8000-000000000001', 't-1', 'https://hooks.example/1', 'whsec_x');
		INSERT INTO webhook_deliveries (endpoint_id, tenant_id, subject, event_id, event_type, payload, state, attempts, settled_at)
		SELECT '00000000-0000-7000-8000-000000000001', 't-1', 'old-' || g, gen_random_uuid(), 'payment.delivered', '{}', 'DELIVERED', 1, now()
		FROM generate_series(1, 200000) g;
		INSERT INTO webhook_deliveries (endpoint_id, tenant_id, subject, event_id, event_type, payload)
		SELECT '00000000-0000-7000-8000-000000000001', 't-1', 'pay-' || (g % 5000), gen_random_uuid(), 'payment.delivered', '{}'
		FROM generate_series(0, 19999) g;
		UPDATE webhook_deliveries SET state = 'SENDING', attempts = 1 WHERE subject = 'pay-7' AND state = 'PENDING'
		  AND delivery_id = (SELECT min(delivery_id) FROM webhook_deliveries WHERE subject = 'pay-7');
		ANALYZE webhook_deliveries`); err != nil {
		t.Fatal(err)
	}
	var head int64
	if err := pool.QueryRow(ctx, `SELECT delivery_id FROM webhook_deliveries WHERE state = 'SENDING'`).Scan(&head); err != nil {
		t.Fatal(err)
	}
	plan := pgtest.Plans(t, pool, true, func(ctx context.Context, tx pgx.Tx) error {
		if err := webhook.Retry(ctx, tx, head, 1, 60); err != nil {
			return err
		}
		var moved int
		err := tx.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE subject = 'pay-7' AND state = 'PENDING'
			AND next_attempt_at > now() + interval '50 seconds'`).Scan(&moved)
		if err == nil && moved != 4 {
			t.Errorf("%d of pay-7's deliveries wait for its retry, want 4 (the refused one and its three later)", moved)
		}
		return err
	})
	if testing.Verbose() {
		t.Logf("retry:\n%s", plan)
	}
	first := strings.SplitN(plan, "\n\n", 2)[0]
	if strings.Contains(first, "Seq Scan on webhook_deliveries") || !strings.Contains(first, "webhook_deliveries_subject_idx") {
		t.Errorf("recording a retry does not find the subject's later deliveries through the subject index:\n%s", plan)
	}
}
