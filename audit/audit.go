// Package audit is the admin audit log: an append-only record of every
// change an operator made — who, what, to which target, when — for the
// HTTP admin endpoints and the CLI alike. It knows actors, actions and
// opaque JSON details, nothing of what was changed.
//
// An entry is written in the transaction of the change it records
// (Record takes the caller's transaction; Change runs a change and its
// entry in one): the two commit together, and an entry that cannot be
// written rolls its change back.
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paydispatch/paydispatch/audit/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/internal/plaintext"
)

// DBTX is what the log needs of a pool or a transaction (a change and its
// entry may commit together).
type DBTX interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}

// Entry is one recorded change.
type Entry struct {
	Seq    int64           `json:"seq"`
	At     time.Time       `json:"at"`
	Actor  string          `json:"actor"`
	Action string          `json:"action"`
	Target string          `json:"target,omitempty"`
	Detail json.RawMessage `json:"detail"`
}

// DB is a pool: the log opens the transactions changes commit in.
type DB interface {
	DBTX
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Record appends an entry, in db: the transaction of the change it
// records. detail is marshalled to JSON (nil: {}). An actor, action or
// target that is not UTF-8 text without control characters is refused
// (PostgreSQL would refuse some of it, and a log line should not carry
// the rest).
func Record(ctx context.Context, db DBTX, actor, action, target string, detail any) (Entry, error) {
	for _, f := range [...]struct{ name, value string }{{"actor", actor}, {"action", action}, {"target", target}} {
		if !plaintext.Valid(f.value) {
			return Entry{}, fmt.Errorf("audit: %s: the %s is not UTF-8 text without control characters", plaintext.Clip(action, 64), f.name)
		}
	}
	raw := []byte("{}")
	if detail != nil {
		var err error
		if raw, err = json.Marshal(detail); err != nil {
			return Entry{}, fmt.Errorf("audit: %s: detail: %w", action, err)
		}
	}
	row, err := dbsqlc.New(db).AppendEntry(ctx, dbsqlc.AppendEntryParams{Actor: actor, Action: action, Target: target, Detail: raw})
	if err != nil {
		return Entry{}, fmt.Errorf("audit: record %s: %w", action, err)
	}
	return fromRow(row), nil
}

// MaxPage bounds a page of List.
const MaxPage = 1000

// List returns up to limit entries, newest first, older than the entry
// before (0: from the newest), and the next page's before: the last
// entry's Seq when more entries follow, else 0.
func List(ctx context.Context, db DBTX, limit int, before int64) ([]Entry, int64, error) {
	if limit <= 0 || limit > MaxPage {
		limit = MaxPage
	}
	rows, err := dbsqlc.New(db).List(ctx, dbsqlc.ListParams{Before: before, MaxRows: int32(limit + 1)})
	if err != nil {
		return nil, 0, fmt.Errorf("audit: list: %w", err)
	}
	var next int64
	if len(rows) > limit {
		rows, next = rows[:limit], rows[limit-1].Seq
	}
	out := make([]Entry, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r)
	}
	return out, next, nil
}

func fromRow(r dbsqlc.AdminAudit) Entry {
	return Entry{Seq: r.Seq, At: r.At, Actor: r.Actor, Action: r.Action, Target: r.Target, Detail: json.RawMessage(r.Detail)}
}

// Change makes a change and records it in one transaction of db: change
// runs in it and returns the entry's detail; the entry is written after
// it. Either both commit or neither does: an error from change, or an
// entry that cannot be written, rolls the change back.
func Change(ctx context.Context, db DB, actor, action, target string, change func(tx pgx.Tx) (detail any, err error)) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		detail, err := change(tx)
		if err != nil {
			return err
		}
		_, err = Record(ctx, tx, actor, action, target, detail)
		return err
	})
}

// Log is the audit log on a database, as the HTTP API uses it.
type Log struct{ db DB }

// Config configures a Log.
type Config struct {
	// DB holds the audit log (required).
	DB DB
}

// New returns the log cfg configures. Nothing in cfg can be invalid: a
// missing DB fails at the first call.
func New(cfg Config) Log { return Log{db: cfg.DB} }

// Begin opens the transaction of a change and its entry.
func (l Log) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := l.db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("audit: begin: %w", err)
	}
	return tx, nil
}

// Record appends an entry in tx, the transaction of the change it
// records.
func (l Log) Record(ctx context.Context, tx pgx.Tx, actor, action, target string, detail any) error {
	_, err := Record(ctx, tx, actor, action, target, detail)
	return err
}

// List returns a page, newest first (see List).
func (l Log) List(ctx context.Context, limit int, before int64) ([]Entry, int64, error) {
	return List(ctx, l.db, limit, before)
}
