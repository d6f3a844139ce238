package deadletter_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/queue"
)

// TestListsUseIndexes: with 200,000 settled queue items beside 2,000
// dead ones and 20,000 outbox dead letters, a page of either, first or
// further on, reads the dead letters' indexes, never the whole table.
func TestListsUseIndexes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO exec_queue (item_type, item_id, tenant_id, queue_status, scheduled_exec_time, updated_at, retry_count, last_error)
		SELECT 'JOB', 'i-' || g, 't-' || (g % 7),
		       CASE WHEN g % 100 = 0 THEN 'DEAD_LETTER' ELSE 'COMPLETED' END,
		       now(), now() - make_interval(secs => g), 3, 'boom'
		FROM generate_series(1, 200000) g;
		INSERT INTO payment_outbox_dead_letters (outbox_id, instruction_id, participant_id, sequence_id, idempotency_key,
		       rail_type, payload, attempt_count, enqueued_at, strict, error_code, rail_code, dead_at)
		SELECT gen_random_uuid(), 'p-' || g, 't-' || (g % 7), g, 'p-' || g, 'SEPA_JSON', '{}', 1, now(), false,
		       'RAIL_TERMINAL', 'AC04', now() - make_interval(secs => g)
		FROM generate_series(1, 20000) g;
		ANALYZE exec_queue; ANALYZE payment_outbox_dead_letters`); err != nil {
		t.Fatal(err)
	}
	mid := time.Now().Add(-100000 * time.Second) // halfway through both
	plan := pgtest.Plans(t, pool, false, func(ctx context.Context, tx pgx.Tx) error {
		q := queue.New(tx)
		for _, after := range []*queue.DeadPosition{nil, {DiedAt: mid, ItemType: "JOB"}} {
			items, err := q.DeadLetters(ctx, queue.DeadFilter{TenantID: "t-2"}, after, 100)
			if err == nil && len(items) == 0 {
				t.Error("no dead items listed")
			}
			if err != nil {
				return err
			}
		}
		for _, after := range []*outbox.DeadLetterPosition{nil, {DeadAt: mid}} {
			dls, err := outbox.ListDeadLetters(ctx, tx, outbox.DeadLetterFilter{Reason: "ac04"}, after, 100)
			if err == nil && len(dls) == 0 {
				t.Error("no outbox dead letters listed")
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if testing.Verbose() {
		t.Logf("lists:\n%s", plan)
	}
	for _, want := range []string{"exec_queue_dead_idx", "payment_outbox_dead_letters_dead_at_idx"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the lists do not read %s:\n%s", want, plan)
		}
	}
	if strings.Contains(plan, "Seq Scan on exec_queue") || strings.Contains(plan, "Seq Scan on payment_outbox_dead_letters") {
		t.Errorf("a list reads a whole table:\n%s", plan)
	}
}
