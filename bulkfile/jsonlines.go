package bulkfile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/paydispatch/paydispatch/internal/strictjson"

	"github.com/paydispatch/paydispatch/payment"
)

// DecodeJSONLines reads JSON lines: one payment object per line (as POST
// /v1/payments takes it), blank lines skipped. A line that is not a
// payment is reported by its number; a line over maxLine bytes, or a file
// with no payments, refuses the file. Declared counts the non-blank
// lines. ctx stops it.
func DecodeJSONLines(ctx context.Context, r io.Reader, maxLine int) (File, error) {
	src := &watchedReader{r: r}
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 0, min(64<<10, maxLine)), maxLine)
	var f File
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if line%ctxEvery == 1 {
			if err := ctx.Err(); err != nil {
				return File{}, stopped(err)
			}
		}
		if len(text) == 0 {
			continue
		}
		f.Declared++
		req, err := payment.DecodeRequest(text)
		if err != nil {
			fe := payment.FieldError{Field: "line", Detail: "not a payment: " + err.Error()}
			var se *strictjson.Error
			if errors.As(err, &se) && se.Field != "" {
				fe = payment.FieldError{Field: se.Field, Detail: se.Detail}
			}
			f.Bad = append(f.Bad, payment.LineError{Line: line, Fields: []payment.FieldError{fe}})
			continue
		}
		f.Requests = append(f.Requests, req)
		f.Places = append(f.Places, line)
	}
	switch err := sc.Err(); {
	case src.err != nil:
		return File{}, src.err
	case errors.Is(err, bufio.ErrTooLong):
		return File{}, refuse(fmt.Sprintf("line %d", line+1), "over %d bytes: one payment per line", maxLine)
	case err != nil:
		return File{}, err
	}
	if len(f.Requests) == 0 && len(f.Bad) == 0 {
		return File{}, refuse("", "the file has no payments: want one JSON payment object per line")
	}
	return f, nil
}
