package pgcopy

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/shopspring/decimal"
)

// Rows builds rows in COPY's binary format for Copy, each
// value written by the method for its column's type. pgx's CopyFrom
// looks up an encode plan for every value it writes: for a Phase A
// chunk's payments, 19 columns, that was a tenth of this process's CPU in
// a bulk file's intake. The methods do not check the column's type: a
// value written with the wrong one is refused by PostgreSQL (a COPY in
// binary checks each value's length and form).
type Rows struct {
	buf bytes.Buffer
	tmp []byte // one value's bytes, before its length is known
}

// copySignature begins COPY's binary format, then the flags and the
// header extension's length (none).
const copySignature = "PGCOPY\n\xff\r\n\x00"

// NewRows returns an empty set of rows, with room for about size
// bytes.
func NewRows(size int) *Rows {
	r := &Rows{}
	r.buf.Grow(size + 32)
	r.buf.WriteString(copySignature)
	r.buf.Write(make([]byte, 8))
	return r
}

// Row begins a row of n values.
func (r *Rows) Row(n int) { r.u16(uint16(n)) }

// Null writes NULL.
func (r *Rows) Null() { r.u32(0xffffffff) }

// Text writes s to a text, varchar or char column.
func (r *Rows) Text(s string) {
	r.u32(uint32(len(s)))
	r.buf.WriteString(s)
}

// TextOrNull writes s, or NULL for "".
func (r *Rows) TextOrNull(s string) {
	if s == "" {
		r.Null()
		return
	}
	r.Text(s)
}

// JSONBOrNull writes s, JSON text, to a jsonb column, or NULL for "".
func (r *Rows) JSONBOrNull(s string) {
	if s == "" {
		r.Null()
		return
	}
	r.u32(uint32(len(s) + 1))
	r.buf.WriteByte(1) // jsonb's binary version
	r.buf.WriteString(s)
}

// postgresEpoch is PostgreSQL's epoch for timestamps and dates.
var postgresEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Timestamptz writes t to a timestamptz column: microseconds since
// 2000-01-01 UTC (finer is truncated, as pgx does).
func (r *Rows) Timestamptz(t time.Time) {
	r.u32(8)
	r.u64(uint64(micros(t)))
}

// micros is t in a timestamptz's binary form: microseconds since
// PostgreSQL's epoch, finer truncated.
func micros(t time.Time) int64 {
	return t.Unix()*1_000_000 + int64(t.Nanosecond())/1000 - postgresEpoch.Unix()*1_000_000
}

// Date writes t's calendar date, in t's location, to a date column.
func (r *Rows) Date(t time.Time) {
	y, m, d := t.Date()
	days := (time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() - postgresEpoch.Unix()) / (24 * 60 * 60)
	r.u32(4)
	r.u32(uint32(int32(days)))
}

// Numeric writes d to a numeric column.
func (r *Rows) Numeric(d decimal.Decimal) error {
	b, ok := appendNumericSmall(r.tmp[:0], d)
	r.tmp = b
	if !ok {
		var err error
		b, err = numericMap.Encode(pgtype.NumericOID, pgtype.BinaryFormatCode,
			pgtype.Numeric{Int: d.Coefficient(), Exp: d.Exponent(), Valid: true}, nil)
		if err != nil {
			return fmt.Errorf("pgcopy: numeric %s: %w", d, err)
		}
	}
	r.u32(uint32(len(b)))
	r.buf.Write(b)
	return nil
}

// numericMap encodes the numerics appendNumericSmall leaves.
var numericMap = pgtype.NewMap()

func (r *Rows) u16(v uint16) {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	r.buf.Write(b[:])
}

func (r *Rows) u32(v uint32) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	r.buf.Write(b[:])
}

func (r *Rows) u64(v uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	r.buf.Write(b[:])
}

// appendNumericSmall writes d in numeric's binary form (digit count,
// weight, sign, display scale, then base-10,000 digits) when its
// coefficient has at most 17 digits and its exponent is not positive,
// every amount's; ok is false otherwise. NumDigits can read one short at
// a power of ten, so 17 bounds the coefficient to an int64.
func appendNumericSmall(b []byte, d decimal.Decimal) ([]byte, bool) {
	exp := d.Exponent()
	if exp > 0 || d.NumDigits() > 17 {
		return b, false
	}
	v, scale := d.CoefficientInt64(), int(-exp)
	var sign uint16
	if v < 0 {
		v, sign = -v, 0x4000
	}
	var dbuf [24]byte
	digits := strconv.AppendInt(dbuf[:0], v, 10)
	// The integer digits padded on the left and the fraction's on the
	// right to whole groups of four, around the point.
	intLen := len(digits) - scale
	var text [64]byte
	t := text[:0]
	if intLen > 0 {
		for range (4 - intLen%4) % 4 {
			t = append(t, '0')
		}
		t = append(t, digits[:intLen]...)
	}
	intGroups := len(t) / 4
	for range max(-intLen, 0) {
		t = append(t, '0')
	}
	t = append(t, digits[max(intLen, 0):]...)
	for len(t)%4 != 0 {
		t = append(t, '0')
	}
	group := func(i int) uint16 {
		g := t[4*i : 4*i+4]
		return uint16(g[0]-'0')*1000 + uint16(g[1]-'0')*100 + uint16(g[2]-'0')*10 + uint16(g[3]-'0')
	}
	// Only the groups from the first to the last that is not zero.
	lo, hi := 0, len(t)/4
	for lo < hi && group(lo) == 0 {
		lo++
	}
	for hi > lo && group(hi-1) == 0 {
		hi--
	}
	weight := intGroups - 1 - lo
	if lo == hi {
		weight, sign = 0, 0
	}
	b = binary.BigEndian.AppendUint16(b, uint16(hi-lo))
	b = binary.BigEndian.AppendUint16(b, uint16(int16(weight)))
	b = binary.BigEndian.AppendUint16(b, sign)
	b = binary.BigEndian.AppendUint16(b, uint16(scale))
	for i := lo; i < hi; i++ {
		b = binary.BigEndian.AppendUint16(b, group(i))
	}
	return b, true
}

// Copy COPYs rows into table's columns in tx and returns how many
// PostgreSQL took. The connection's tracer, when it traces COPYs, sees
// it as it sees pgx's CopyFrom.
func Copy(ctx context.Context, tx pgx.Tx, table string, columns []string, rows *Rows) (n int64, err error) {
	cols := make([]string, len(columns))
	for i, c := range columns {
		cols[i] = pgx.Identifier{c}.Sanitize()
	}
	conn := tx.Conn()
	if tr, ok := conn.Config().Tracer.(pgx.CopyFromTracer); ok {
		ctx = tr.TraceCopyFromStart(ctx, conn, pgx.TraceCopyFromStartData{TableName: pgx.Identifier{table}, ColumnNames: columns})
		defer func() {
			tr.TraceCopyFromEnd(ctx, conn, pgx.TraceCopyFromEndData{CommandTag: pgconn.NewCommandTag(fmt.Sprintf("COPY %d", n)), Err: err})
		}()
	}
	rows.u16(0xffff) // the trailer
	sql := "COPY " + pgx.Identifier{table}.Sanitize() + " (" + strings.Join(cols, ", ") + ") FROM STDIN (FORMAT binary)"
	tag, err := conn.PgConn().CopyFrom(ctx, &rows.buf, sql)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
