// Package idempotency keeps the Idempotency-Key records of an HTTP API: a
// request that creates something may carry a key; the first request with
// it is recorded in flight, then with its response; a retry with the same
// key and the same body gets that response again, a retry with another
// body is refused, and a retry while the first is still running is told
// to wait. Keys are scoped to a principal (the caller's token) and kept
// for a TTL, after which a cleanup deletes them.
//
// The package knows requests and responses as bytes; it knows nothing of
// payments. httpapi holds the HTTP side.
package idempotency

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paydispatch/paydispatch/idempotency/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/internal/ptr"
)

// DBTX is what the store needs of a pool.
type DBTX interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}

// Config is the store's settings.
type Config struct {
	// TTL is how long a key is kept (default 24 h).
	TTL time.Duration
	// AbandonedAfter: a request in flight for longer is taken to have
	// died with its server, and its key may be claimed again (default
	// 5 min).
	AbandonedAfter time.Duration
}

// Store keeps the records in PostgreSQL.
type Store struct {
	db  DBTX
	cfg Config
}

// NewStore returns a store on db.
func NewStore(db DBTX, cfg Config) *Store {
	if cfg.TTL <= 0 {
		cfg.TTL = 24 * time.Hour
	}
	if cfg.AbandonedAfter <= 0 {
		cfg.AbandonedAfter = 5 * time.Minute
	}
	return &Store{db: db, cfg: cfg}
}

// Response is a recorded answer.
type Response struct {
	Status      int
	ContentType string
	Location    string
	Body        []byte
}

// Record is what a key holds: the request it was first used for and,
// once that request is answered, its response (nil while in flight).
type Record struct {
	Method, Path string
	RequestHash  []byte
	Response     *Response
}

// Claim is a key the caller now holds: it must Complete or Release it.
type Claim struct {
	principal, key string
	since          time.Time
}

// Claim takes (principal, key) for a new request. It returns a Claim when
// the caller holds the key now, else the Record of the request that holds
// or answered it.
func (s *Store) Claim(ctx context.Context, principal, key, method, path string) (*Claim, *Record, error) {
	q := dbsqlc.New(s.db)
	for range 3 {
		since, err := q.Claim(ctx, dbsqlc.ClaimParams{
			Principal: principal, Key: key, Method: method, Path: path,
			ExpiresAt: time.Now().Add(s.cfg.TTL), AbandonedBefore: time.Now().Add(-s.cfg.AbandonedAfter),
		})
		if err == nil {
			return &Claim{principal: principal, key: key, since: since}, nil, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, nil, fmt.Errorf("idempotency: claim: %w", err)
		}
		row, err := q.Get(ctx, dbsqlc.GetParams{Principal: principal, Key: key})
		if errors.Is(err, pgx.ErrNoRows) {
			continue // released meanwhile: claim again
		}
		if err != nil {
			return nil, nil, fmt.Errorf("idempotency: read: %w", err)
		}
		rec := &Record{Method: row.Method, Path: row.Path, RequestHash: row.RequestHash}
		if row.Status != nil {
			rec.Response = &Response{Status: int(*row.Status), ContentType: ptr.Deref(row.ContentType), Location: ptr.Deref(row.Location), Body: row.ResponseBody}
		}
		return nil, rec, nil
	}
	return nil, nil, errors.New("idempotency: claim: the key keeps changing hands")
}

// Complete records the response of the claimed request, and the hash of
// its body, for the retries to come.
func (s *Store) Complete(ctx context.Context, c *Claim, requestHash []byte, r Response) error {
	status := int32(r.Status)
	_, err := dbsqlc.New(s.db).Complete(ctx, dbsqlc.CompleteParams{
		Principal: c.principal, Key: c.key, CreatedAt: c.since, RequestHash: requestHash,
		Status: &status, ContentType: ptr.Optional(r.ContentType), Location: ptr.Optional(r.Location), ResponseBody: r.Body,
	})
	if err != nil {
		return fmt.Errorf("idempotency: complete: %w", err)
	}
	return nil
}

// Release gives the key up without a response (the request failed in a
// way worth retrying), so that a retry runs the request again.
func (s *Store) Release(ctx context.Context, c *Claim) error {
	if err := dbsqlc.New(s.db).Release(ctx, dbsqlc.ReleaseParams{Principal: c.principal, Key: c.key, CreatedAt: c.since}); err != nil {
		return fmt.Errorf("idempotency: release: %w", err)
	}
	return nil
}

// DeleteExpired deletes the keys past their TTL and says how many.
func (s *Store) DeleteExpired(ctx context.Context) (int64, error) {
	n, err := dbsqlc.New(s.db).DeleteExpired(ctx)
	if err != nil {
		return 0, fmt.Errorf("idempotency: delete expired: %w", err)
	}
	return n, nil
}

// Cleanup deletes expired keys every interval until ctx ends.
func (s *Store) Cleanup(ctx context.Context, every time.Duration, onErr func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.DeleteExpired(ctx); err != nil && ctx.Err() == nil && onErr != nil {
				onErr(err)
			}
		}
	}
}
