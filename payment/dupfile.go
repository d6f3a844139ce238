package payment

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
)

// DefaultDuplicateFileWindow is how long serve remembers a tenant's bulk
// file by default, to refuse it sent again.
const DefaultDuplicateFileWindow = 7 * 24 * time.Hour

// DefaultFingerprintRetention keeps a file's fingerprint a day after its
// duplicate window closed: a margin, as the window is the setting of
// serve when the file came, and the retention cleaner may run elsewhere.
const DefaultFingerprintRetention = 24 * time.Hour

// DuplicateFileError: a bulk file holds the same payments as one its
// tenant sent within the duplicate window (ServiceConfig.
// DuplicateFileWindow). Nothing was started.
type DuplicateFileError struct {
	TenantID string
	// BatchID is the earlier file's, ReceivedAt when it was accepted.
	BatchID    string
	ReceivedAt time.Time
}

func (e *DuplicateFileError) Error() string {
	return fmt.Sprintf("payment: tenant %s sent the same payments as batch %s, received at %s", e.TenantID, e.BatchID,
		e.ReceivedAt.UTC().Format(time.RFC3339))
}

// fileFingerprint is what makes two files the same: their payments, each
// in its canonical form (an amount's, a time's, a routed rail's spelling
// aside) less its id, in any order. A file exported again with other
// formatting, sorted otherwise, or with new payment ids matches, while
// the same ids alone would only replay (Receive) and never pay twice.
// Each payment is hashed on every core, as batchID does, and the sorted
// hashes are hashed.
func fileFingerprint(reqs []Request) (string, error) {
	sums := make([][sha256.Size]byte, len(reqs))
	err := onEveryCore(len(reqs), func(lo, hi int) error {
		var raw []byte
		for i := lo; i < hi; i++ {
			r := reqs[i]
			r.PaymentID = ""
			var err error
			if raw, err = appendCanonical(raw[:0], r); err != nil {
				return err
			}
			sums[i] = sha256.Sum256(raw)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	slices.SortFunc(sums, func(a, b [sha256.Size]byte) int { return bytes.Compare(a[:], b[:]) })
	h := sha256.New()
	for _, s := range sums {
		h.Write(s[:])
	}
	return "file-" + hex.EncodeToString(h.Sum(nil)), nil
}

// tenantsOf is the tenants of xs, in their first order.
func tenantsOf[T interface{ tenant() string }](xs []T) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range xs {
		if t := x.tenant(); !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

func (r Request) tenant() string   { return r.TenantID }
func (c Candidate) tenant() string { return c.Request.TenantID }

// holdFile takes the lock of a file's fingerprint on a connection of its
// own, so that the same payments sent twice at once are not both found
// new: the second waits for the first's record, then finds it. It
// answers the release. A Store on a transaction (no pool) holds none.
func (s *Service) holdFile(ctx context.Context, fingerprint string) (func(), error) {
	pool, ok := s.cfg.Store.db.(interface {
		Acquire(ctx context.Context) (*pgxpool.Conn, error)
	})
	if !ok {
		return func() {}, nil
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("payment: lock a file: %w", err)
	}
	q := dbsqlc.New(conn)
	if err := q.LockFile(ctx, fingerprint); err != nil {
		conn.Release()
		return nil, fmt.Errorf("payment: lock a file: %w", err)
	}
	return func() {
		if err := q.UnlockFile(context.WithoutCancel(ctx), fingerprint); err != nil {
			// Its session may hold it still: the connection goes.
			s.log().Warn("a file's lock was not released; closing its connection", "error", err)
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
		conn.Release()
	}, nil
}

// sentBefore finds a file of one of tenants with the fingerprint,
// accepted within the window; nil when there is none.
func (s *Service) sentBefore(ctx context.Context, fingerprint string, tenants []string) (*DuplicateFileError, error) {
	return sentSince(ctx, s.cfg.Store.db, fingerprint, tenants, s.now().Add(-s.cfg.DuplicateFileWindow))
}

// sentSince finds the latest file of one of tenants with the fingerprint
// accepted at or after since; nil when there is none.
func sentSince(ctx context.Context, db DB, fingerprint string, tenants []string, since time.Time) (*DuplicateFileError, error) {
	row, err := dbsqlc.New(db).LatestFileFingerprint(ctx, dbsqlc.LatestFileFingerprintParams{
		Fingerprint: fingerprint, TenantIds: tenants, Since: since})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("payment: files sent before: %w", err)
	}
	return &DuplicateFileError{TenantID: row.TenantID, BatchID: row.BatchID, ReceivedAt: row.ReceivedAt}, nil
}

// rememberFile keeps an accepted file's fingerprint, under each of its
// tenants, for the window.
func (s *Service) rememberFile(ctx context.Context, fingerprint, batchID string, tenants []string) error {
	now := s.now()
	if err := dbsqlc.New(s.cfg.Store.db).InsertFileFingerprints(ctx, dbsqlc.InsertFileFingerprintsParams{
		TenantIds: tenants, Fingerprint: fingerprint, BatchID: batchID, ReceivedAt: now, ExpiresAt: now.Add(s.cfg.DuplicateFileWindow)}); err != nil {
		return fmt.Errorf("payment: batch %s: remember its fingerprint: %w", batchID, err)
	}
	return nil
}

// recordOverride calls record, in a transaction of its own, for a file
// taken although it matches one sent before: the override is recorded
// (the audit entry) before anything starts, or nothing starts.
func (s *Service) recordOverride(ctx context.Context, record OverrideRecord, dup DuplicateFileError, payments int) error {
	if record == nil {
		return nil
	}
	if err := pgx.BeginFunc(ctx, s.cfg.Store.db, func(tx pgx.Tx) error { return record(ctx, tx, dup, payments) }); err != nil {
		return fmt.Errorf("payment: record a duplicate file's override: %w", err)
	}
	return nil
}

// DeleteFileFingerprints deletes up to limit fingerprints of bulk files
// whose duplicate window closed before before, oldest first, and answers
// how many: payment_file_fingerprints' retention (package retention
// calls it).
func DeleteFileFingerprints(ctx context.Context, db DB, before time.Time, limit int) (int64, error) {
	n, err := dbsqlc.New(db).DeleteFileFingerprints(ctx, dbsqlc.DeleteFileFingerprintsParams{Before: before, MaxRows: int32(min(max(limit, 1), 10_000))})
	if err != nil {
		return n, fmt.Errorf("payment: delete file fingerprints: %w", err)
	}
	return n, nil
}
