// Package explain shows PostgreSQL's plans of the statements a piece of
// code really sends, with its real arguments: the code runs on a recording
// transaction that EXPLAINs every statement just before running it, and
// everything is rolled back at the end. Tests use it to check that hot
// queries use their indexes, the benchmarks to print plans; no package has
// to export its SQL or an Explain method for it.
package explain

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Plan is one statement and PostgreSQL's plan for it.
type Plan struct {
	SQL  string
	Plan string
}

// Options say how to explain.
type Options struct {
	// Analyze runs each statement once more under EXPLAIN ANALYZE (in a
	// savepoint rolled back) for actual row counts and buffers.
	Analyze bool
	// Generic shows the plan PostgreSQL keeps for a prepared statement
	// under plan_cache_mode force_generic_plan, made without the values.
	// A statement EXPLAINed with its values is planned for them, whatever
	// plan_cache_mode says; only EXPLAIN EXECUTE of a prepared statement
	// shows the generic plan.
	Generic bool
}

// Run runs f on a transaction that records the plan of every statement f
// sends (transactions f begins become savepoints), then rolls it all back:
// f changes nothing. It returns the plans in the order the statements ran.
func Run(ctx context.Context, pool *pgxpool.Pool, o Options, f func(ctx context.Context, tx pgx.Tx) error) ([]Plan, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("explain: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	r := &recorder{Tx: tx, log: &log{opts: o}}
	if err := f(ctx, r); err != nil {
		return r.log.plans, err
	}
	return r.log.plans, r.log.err
}

// Find is the plan of the first statement whose text contains substr.
func Find(plans []Plan, substr string) (Plan, bool) {
	for _, p := range plans {
		if strings.Contains(p.SQL, substr) {
			return p, true
		}
	}
	return Plan{}, false
}

// recorder is a transaction that explains each statement before running it.
type recorder struct {
	pgx.Tx
	log *log // shared with the savepoints begun from it
}

type log struct {
	opts  Options
	plans []Plan
	err   error // the first EXPLAIN that failed
	// prepared numbers the statements Generic prepares.
	prepared int
}

func (r *recorder) explain(ctx context.Context, sql string, args []any) {
	prefix := "EXPLAIN (COSTS OFF) "
	if r.log.opts.Analyze {
		prefix = "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) "
	}
	// A savepoint: EXPLAIN ANALYZE really runs the statement, and a failed
	// EXPLAIN must not abort the transaction f works in.
	sp, err := r.Tx.Begin(ctx)
	if err == nil {
		var lines []string
		if r.log.opts.Generic {
			lines, err = r.explainGeneric(ctx, sp, prefix, sql, args)
		} else {
			var rows pgx.Rows
			if rows, err = sp.Query(ctx, prefix+sql, args...); err == nil {
				lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
			}
		}
		if err == nil {
			r.log.plans = append(r.log.plans, Plan{SQL: sql, Plan: strings.Join(lines, "\n")})
		}
		if rbErr := sp.Rollback(ctx); err == nil {
			err = rbErr
		}
	}
	if err != nil && r.log.err == nil {
		r.log.err = fmt.Errorf("explain %q: %w", firstLine(sql), err)
	}
}

// explainGeneric prepares sql and explains its execution with args written
// as literals (EXECUTE takes no parameters) under force_generic_plan, on
// sp, a savepoint rolled back after.
func (r *recorder) explainGeneric(ctx context.Context, sp pgx.Tx, prefix, sql string, args []any) ([]string, error) {
	r.log.prepared++
	name := fmt.Sprintf("explain_generic_%d", r.log.prepared)
	sd, err := sp.Prepare(ctx, name, sql)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sp.Conn().Deallocate(context.WithoutCancel(ctx), name) }()
	if len(args) != len(sd.ParamOIDs) {
		return nil, fmt.Errorf("%d arguments for %d parameters", len(args), len(sd.ParamOIDs))
	}
	literals := make([]string, len(args))
	for i, arg := range args {
		text, err := sp.Conn().TypeMap().Encode(sd.ParamOIDs[i], pgtype.TextFormatCode, arg, nil)
		switch {
		case err != nil:
			return nil, fmt.Errorf("argument $%d: %w", i+1, err)
		case text == nil:
			literals[i] = "NULL"
		default:
			literals[i] = "'" + strings.ReplaceAll(string(text), "'", "''") + "'"
		}
	}
	if _, err := sp.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
		return nil, err
	}
	execute := prefix + "EXECUTE " + name
	if len(literals) > 0 {
		execute += "(" + strings.Join(literals, ", ") + ")"
	}
	rows, err := sp.Query(ctx, execute)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func firstLine(sql string) string {
	sql = strings.TrimSpace(sql)
	if i := strings.IndexByte(sql, '\n'); i >= 0 {
		return sql[:i]
	}
	return sql
}

// explainable tells whether a statement has a plan (utility statements
// such as SET or SAVEPOINT have none).
func explainable(sql string) bool {
	s := strings.ToUpper(strings.TrimSpace(stripComments(sql)))
	for _, kw := range []string{"SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "VALUES"} {
		if strings.HasPrefix(s, kw) {
			return true
		}
	}
	return false
}

// stripComments drops the leading "-- name: ..." lines sqlc puts first.
func stripComments(sql string) string {
	for {
		s := strings.TrimSpace(sql)
		if !strings.HasPrefix(s, "--") {
			return s
		}
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return ""
		}
		sql = s[i+1:]
	}
}

func (r *recorder) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if explainable(sql) {
		r.explain(ctx, sql, args)
	}
	return r.Tx.Exec(ctx, sql, args...)
}

func (r *recorder) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if explainable(sql) {
		r.explain(ctx, sql, args)
	}
	return r.Tx.Query(ctx, sql, args...)
}

func (r *recorder) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if explainable(sql) {
		r.explain(ctx, sql, args)
	}
	return r.Tx.QueryRow(ctx, sql, args...)
}

func (r *recorder) Begin(ctx context.Context) (pgx.Tx, error) {
	sp, err := r.Tx.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &recorder{Tx: sp, log: r.log}, nil
}

// errUnsupported: batches bypass the recording; the code explained should
// not use them, or explain their statements one by one.
var errUnsupported = errors.New("explain: SendBatch is not recorded")

func (r *recorder) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if r.log.err == nil {
		r.log.err = errUnsupported
	}
	return r.Tx.SendBatch(ctx, b)
}
