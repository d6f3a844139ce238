package pgcopy

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// A Param is a statement's parameter already in PostgreSQL's binary form,
// with its type: for statements whose parameters are arrays of hundreds
// of thousands of values (a bulk file's staged chunk), where pgx encodes
// each element through its array codec's plan, about 90 ns a value.
type Param struct {
	OID   uint32
	Value []byte
}

// TextParam is s as a text parameter.
func TextParam(s string) Param { return Param{OID: pgtype.TextOID, Value: append([]byte{}, s...)} } // never nil: nil is NULL

// TextArray is ss as a text[] parameter: a one-dimensional array without
// NULLs, each element its bytes.
func TextArray(ss []string) Param {
	n := 20
	for _, s := range ss {
		n += 4 + len(s)
	}
	b := arrayHeader(make([]byte, 0, n), pgtype.TextOID, len(ss))
	for _, s := range ss {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	return Param{OID: pgtype.TextArrayOID, Value: b}
}

// TimestamptzArray is ts as a timestamptz[] parameter, each to the
// microsecond (finer is truncated, as Rows.Timestamptz and pgx do).
func TimestamptzArray(ts []time.Time) Param {
	b := arrayHeader(make([]byte, 0, 20+12*len(ts)), pgtype.TimestamptzOID, len(ts))
	for _, t := range ts {
		b = binary.BigEndian.AppendUint32(b, 8)
		b = binary.BigEndian.AppendUint64(b, uint64(micros(t)))
	}
	return Param{OID: pgtype.TimestamptzArrayOID, Value: b}
}

// arrayHeader begins an array of n elements of type elem: its dimensions
// (none for an empty array), no NULLs, the element type, and the one
// dimension's length and lower bound.
func arrayHeader(b []byte, elem uint32, n int) []byte {
	dims := uint32(min(n, 1))
	b = binary.BigEndian.AppendUint32(b, dims)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, elem)
	if dims == 0 {
		return b
	}
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	return binary.BigEndian.AppendUint32(b, 1)
}

// Exec runs sql in tx with params given in binary form, and returns how
// many rows it changed. The statement is parsed for the call (no
// statement cache): it is for statements whose parameters dwarf their
// parse. The connection's tracer sees it as it sees pgx's Exec, without
// its arguments.
func Exec(ctx context.Context, tx pgx.Tx, sql string, params ...Param) (n int64, err error) {
	values, oids, formats := make([][]byte, len(params)), make([]uint32, len(params)), make([]int16, len(params))
	for i, p := range params {
		values[i], oids[i], formats[i] = p.Value, p.OID, pgtype.BinaryFormatCode
	}
	conn := tx.Conn()
	var tag pgconn.CommandTag
	if tr := conn.Config().Tracer; tr != nil {
		ctx = tr.TraceQueryStart(ctx, conn, pgx.TraceQueryStartData{SQL: sql})
		defer func() { tr.TraceQueryEnd(ctx, conn, pgx.TraceQueryEndData{CommandTag: tag, Err: err}) }()
	}
	if tag, err = conn.PgConn().ExecParams(ctx, sql, values, oids, formats, nil).Close(); err != nil {
		return 0, fmt.Errorf("pgcopy: exec: %w", err)
	}
	return tag.RowsAffected(), nil
}
