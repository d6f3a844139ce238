package payment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
)

// BatchView is a bulk file's progress: how many of its payments are at
// each stage now.
type BatchView struct {
	BatchID   string        `json:"batchId"`
	Tenants   []string      `json:"-"`
	CreatedAt time.Time     `json:"createdAt"`
	Payments  int           `json:"payments"`
	Chunks    int           `json:"chunks"`
	Rejected  int           `json:"rejected"`
	Progress  BatchProgress `json:"progress"`
}

// BatchProgress counts a file's started payments by stage: received (not
// yet through Phase A), rejected by Phase A, scheduled, executing
// (ACCEPTED or PROCESSING), delivered, failed, returned, cancelled.
type BatchProgress struct {
	Received  int `json:"received"`
	Rejected  int `json:"rejected"`
	Scheduled int `json:"scheduled"`
	Executing int `json:"executing"`
	Delivered int `json:"delivered"`
	Failed    int `json:"failed"`
	Returned  int `json:"returned"`
	Cancelled int `json:"cancelled"`
}

// maxStoredRejections bounds the rejections kept with a file.
const maxStoredRejections = 10000

// RecordRejections keeps the payments of a file that were refused before
// it started (the first 10,000), for GET /v1/payment-batches/{id}/rejections.
func (s *Service) RecordRejections(ctx context.Context, batchID string, rejections []LineError) error {
	n := len(rejections)
	kept := make([]storedRejection, min(n, maxStoredRejections))
	for i := range kept {
		le := rejections[i]
		kept[i] = storedRejection{Line: le.Line, Fields: le.Fields, TenantID: le.TenantID}
	}
	raw, err := json.Marshal(kept)
	if err != nil {
		return err
	}
	if err := dbsqlc.New(s.cfg.Store.db).SetBatchRejections(ctx, dbsqlc.SetBatchRejectionsParams{BatchID: batchID, Rejected: int32(n), Rejections: raw}); err != nil {
		return fmt.Errorf("payment: batch %s: record its rejections: %w", batchID, err)
	}
	return nil
}

// Batch returns a file's progress; ErrNotFound when there is no such file.
func (s *Service) Batch(ctx context.Context, id string) (BatchView, error) {
	q := dbsqlc.New(s.cfg.Store.db)
	b, err := q.GetBatch(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return BatchView{}, ErrNotFound
	}
	if err != nil {
		return BatchView{}, fmt.Errorf("payment: batch %s: %w", id, err)
	}
	p, err := q.BatchProgress(ctx, id)
	if err != nil {
		return BatchView{}, fmt.Errorf("payment: batch %s progress: %w", id, err)
	}
	return BatchView{BatchID: b.BatchID, Tenants: b.Tenants, CreatedAt: b.CreatedAt, Payments: int(b.Payments), Chunks: int(b.Chunks),
		Rejected: int(b.Rejected), Progress: BatchProgress{Received: int(p.Received), Rejected: int(p.Rejected), Scheduled: int(p.Scheduled),
			Executing: int(p.Executing), Delivered: int(p.Delivered), Failed: int(p.Failed), Returned: int(p.Returned),
			Cancelled: int(p.Cancelled)}}, nil
}

// BatchRejections returns the payments refused in a file, each with its
// tenant, and the file's tenants (for the caller's tenant check);
// ErrNotFound when there is no such file.
func (s *Service) BatchRejections(ctx context.Context, id string) ([]LineError, []string, error) {
	b, err := dbsqlc.New(s.cfg.Store.db).GetBatch(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, ErrNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("payment: batch %s: %w", id, err)
	}
	var kept []storedRejection
	if err := json.Unmarshal(b.Rejections, &kept); err != nil {
		return nil, nil, fmt.Errorf("payment: batch %s rejections: %w", id, err)
	}
	out := make([]LineError, len(kept))
	for i, k := range kept {
		out[i] = LineError{Line: k.Line, Fields: k.Fields, TenantID: k.TenantID}
	}
	return out, b.Tenants, nil
}

// storedRejection is a LineError as a file keeps it: with its tenant (a
// rejection kept before tenants were has none, and is shown to operators
// only).
type storedRejection struct {
	Line     int           `json:"line"`
	Fields   []field.Error `json:"errors"`
	TenantID string        `json:"tenantId,omitempty"`
}
