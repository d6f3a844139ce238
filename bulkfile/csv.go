package bulkfile

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/payment"
)

// CSVColumns are the columns a CSV file may have, in its header row (any
// order): payment.Request's members, derived from it, a nested one's path
// in camel case (creditor.iban: creditorIban). Required: paymentId,
// debtorAccount, amount, currency, creditorName, creditorIban,
// requestedExecutionTime; tenantId may be left out when the caller's
// token (or the tenantId query parameter) names it; rail names the
// payment's rail (empty, or no column: the routing rules choose);
// priority is HIGH, NORMAL or LOW (empty, or no column: the file's).
var CSVColumns = csvColumns()

// csvFields are the Request's fields, one a column of CSVColumns.
var csvFields = payment.RequestFields()

func csvColumns() []string {
	var out []string
	for _, f := range payment.RequestFields() {
		parent, name, nested := strings.Cut(f.Path(), ".")
		if nested {
			name = parent + strings.ToUpper(name[:1]) + name[1:]
		} else {
			name = parent
		}
		out = append(out, name)
	}
	return out
}

var requiredCSV = []string{"paymentId", "debtorAccount", "amount", "currency", "creditorName", "creditorIban", "requestedExecutionTime"}

// maxCSVField bounds one field; no column needs more than 140 characters.
const maxCSVField = 1024

// DecodeCSV reads a CSV file (RFC 4180, comma-separated, a header row).
// An unreadable file, an unknown or missing column, or a row with the
// wrong number of fields refuses the file; a field that cannot be a
// payment's (a bad time) is reported for its line. Declared counts the
// data rows. ctx stops it.
func DecodeCSV(ctx context.Context, r io.Reader) (File, error) {
	src := &watchedReader{r: r}
	cr := csv.NewReader(src)
	cr.ReuseRecord = false
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return File{}, refuse("", "the file is empty: want a header row (%s) and one payment per row", strings.Join(CSVColumns, ","))
	}
	if err != nil {
		return File{}, csvError(src, err)
	}
	col := map[string]int{}
	for i, name := range header {
		name = strings.TrimSpace(strings.TrimPrefix(name, "\uFEFF"))
		known := false
		for _, c := range CSVColumns {
			known = known || c == name
		}
		if !known {
			return File{}, refuse("line 1", "unknown column %q: the columns are %s", plaintext.Clip(name, 32), strings.Join(CSVColumns, ","))
		}
		if _, dup := col[name]; dup {
			return File{}, refuse("line 1", "column %q appears twice", name)
		}
		col[name] = i
	}
	for _, c := range requiredCSV {
		if _, ok := col[c]; !ok {
			return File{}, refuse("line 1", "no %s column: the header needs %s", c, strings.Join(requiredCSV, ","))
		}
	}
	var f File
	for {
		if f.Declared%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return File{}, stopped(err)
			}
		}
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return File{}, csvError(src, err)
		}
		line, _ := cr.FieldPos(0)
		f.Declared++
		get := func(name string) string {
			if i, ok := col[name]; ok {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		var bad []field.Error
		for _, v := range rec {
			if len(v) > maxCSVField {
				return File{}, refuse(fmt.Sprintf("line %d", line), "a field is over %d bytes", maxCSVField)
			}
		}
		var req payment.Request
		for i, f := range csvFields {
			v := get(CSVColumns[i])
			switch {
			case !f.IsTime():
				f.Set(&req, v)
			case v != "":
				t, err := time.Parse(time.RFC3339, v)
				if err != nil {
					bad = append(bad, field.Error{Field: f.Path(), Detail: "want RFC 3339, e.g. 2026-11-22T16:00:00Z"})
				}
				f.SetTime(&req, t)
			}
		}
		if len(bad) > 0 {
			f.Bad = append(f.Bad, payment.LineError{Line: line, Fields: bad})
			continue
		}
		f.Requests = append(f.Requests, req)
		f.Places = append(f.Places, line)
	}
	if len(f.Requests) == 0 && len(f.Bad) == 0 {
		return File{}, refuse("", "the file has a header and no payments")
	}
	return f, nil
}

// csvError is a refusal for a malformed file; a failure to read the body
// (too large, cut off) is returned as it is, for the caller to answer.
func csvError(src *watchedReader, err error) error {
	if src.err != nil {
		return src.err
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return refuse(fmt.Sprintf("line %d", pe.Line), "%v", pe.Err)
	}
	return refuse("", "the file cannot be read as CSV: %v", err)
}
