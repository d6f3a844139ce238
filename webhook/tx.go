package webhook

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The endpoint changes inside the caller's transaction: each commits with
// the caller's other writes (an admin change's audit entry), or not at
// all. A transaction the store would begin is then a savepoint of tx.

// RegisterTx is Register inside the caller's transaction.
func (s Store) RegisterTx(ctx context.Context, tx pgx.Tx, n NewEndpoint) (Endpoint, string, error) {
	s.db = tx
	return s.Register(ctx, n)
}

// DeleteTx is Delete inside the caller's transaction.
func (s Store) DeleteTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) error {
	s.db = tx
	return s.Delete(ctx, id)
}

// RotateTx is Rotate inside the caller's transaction.
func (s Store) RotateTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, keepOld time.Duration) (Endpoint, string, error) {
	s.db = tx
	return s.Rotate(ctx, id, keepOld)
}

// RedriveTx is Redrive inside the caller's transaction.
func (s Store) RedriveTx(ctx context.Context, tx pgx.Tx, endpoint uuid.UUID, ids []int64) (int64, error) {
	s.db = tx
	return s.Redrive(ctx, endpoint, ids)
}
