package outbox

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/outbox/internal/dbsqlc"
)

// ClaimOnly claims up to n messages (strict heads first) as a relayer
// named relayerID would, and settles nothing: a relayer that died right
// after its claim.
func ClaimOnly(ctx context.Context, pool *pgxpool.Pool, relayerID string, n int) ([]Message, error) {
	r, err := New(Config{Pool: pool, Sender: nopSender{}, ID: relayerID, ClaimBatchSize: n, StrictClaimBatchSize: n})
	if err != nil {
		return nil, err
	}
	cs, _, err := r.claim(ctx, n)
	out := make([]Message, len(cs))
	for i, c := range cs {
		out[i] = c.msg
	}
	return out, err
}

// ClaimInTx runs the claim statements inside tx (strict, then due), and
// returns the messages claimed.
func ClaimInTx(ctx context.Context, tx pgx.Tx, relayerID string, n int) ([]Message, error) {
	s, err := ClaimModeInTx(ctx, tx, Strict, relayerID, n)
	if err != nil {
		return nil, err
	}
	d, err := ClaimModeInTx(ctx, tx, Throughput, relayerID, n)
	return append(s, d...), err
}

// ClaimModeInTx runs one claim statement inside tx: the strict claim
// (mode Strict) or the throughput claim.
func ClaimModeInTx(ctx context.Context, tx pgx.Tx, mode Ordering, relayerID string, n int) ([]Message, error) {
	q := dbsqlc.New(tx)
	var rows []dbsqlc.ClaimDueRow
	if mode == Strict {
		s, err := q.ClaimStrict(ctx, dbsqlc.ClaimStrictParams{BatchSize: int32(n), RelayerID: relayerID, AttemptIds: attemptIDs(n)})
		if err != nil {
			return nil, err
		}
		rows = s2d(s)
	} else {
		d, err := q.ClaimDue(ctx, dbsqlc.ClaimDueParams{BatchSize: int32(n), RelayerID: relayerID, AttemptIds: attemptIDs(n)})
		if err != nil {
			return nil, err
		}
		rows = d
	}
	var out []Message
	for _, c := range rows {
		out = append(out, claimedFrom(c, c.ClaimedAt).msg)
	}
	return out, nil
}

// RecordInTx records an outcome batch for messages claimed in tx, as the
// relayer's recorder does (without hooks or chained claims): the first
// DISPATCHED, the others RETRYABLE and requeued after a second. It
// returns how many claims it settled.
func RecordInTx(ctx context.Context, tx pgx.Tx, msgs []Message) (int, error) {
	batch := make([]outcome, len(msgs))
	for i, m := range msgs {
		batch[i] = outcome{c: claimed{msg: m}, state: StateRetryable, res: Result{Outcome: Retryable, Code: "RAIL_BUSY"},
			code: CodeRailRetryable, requeueAfter: time.Second}
		if i == 0 {
			batch[i] = outcome{c: claimed{msg: m}, state: StateDispatched, res: Result{Outcome: Delivered, Reference: "REF"}, requeueAfter: -1}
		}
	}
	rows, err := dbsqlc.New(tx).RecordOutcomes(ctx, recordParams(batch))
	return len(rows), err
}

// NextDue runs the wake-up timer's query: seconds until the next pending
// row falls due, -1 for none.
func NextDue(ctx context.Context, db DBTX) (float64, error) {
	return dbsqlc.New(db).NextDue(ctx)
}

func s2d(s []dbsqlc.ClaimStrictRow) []dbsqlc.ClaimDueRow {
	out := make([]dbsqlc.ClaimDueRow, len(s))
	for i, r := range s {
		out[i] = dbsqlc.ClaimDueRow(r)
	}
	return out
}

// Backoff exposes the backoff formula.
func (c Config) Backoff(attempt int, u float64) time.Duration {
	return c.withDefaults().backoff(attempt, u)
}

// SendDeadline exposes how long after its claim a message may be sent.
func (c Config) SendDeadline() time.Duration { return c.withDefaults().sendDeadline() }

// Validate exposes the config check.
func (c Config) Validate() error { return c.withDefaults().validate() }

type nopSender struct{}

func (nopSender) Validate(Message) error                  { return nil }
func (nopSender) Send(context.Context, Message) Result    { return Result{Outcome: Unknown} }
func (nopSender) Inquire(context.Context, Message) Result { return Result{Outcome: Unknown} }
