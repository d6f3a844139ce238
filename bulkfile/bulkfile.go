// Package bulkfile decodes bulk payment files from outside: CSV with a
// documented header, JSON lines, and ISO 20022 pain.001 (customer credit
// transfer initiation), which must validate against its version's ISO
// schema (shipped in schemas/, checked by package xmlschema). Each
// decoder turns a file into payment requests, each with its place in the
// file (a CSV line, a pain.001 transaction's number), or refuses the
// whole file when it cannot be read, naming where. Whether a request is a
// valid payment is Phase A's business, not the decoder's. Each decoder
// takes the request's context, and stops when it is done.
package bulkfile

import (
	"errors"
	"fmt"
	"io"

	"github.com/paydispatch/paydispatch/payment"
)

// File is a decoded file: the requests, where each came from (Places[i]
// for Requests[i]: a line number, or a transaction's number), the
// entries that could not be turned into a request at all, and how many
// entries the file declares. Every entry is accounted for: in an
// accepted file, len(Requests)+len(Bad) == Declared, so that none can be
// lost between the file and the answer.
type File struct {
	Requests []payment.Request
	Places   []int
	Bad      []payment.LineError
	// Declared counts the file's entries: a pain.001's transactions
	// (which its NbOfTxs must equal), a CSV file's data rows, the
	// non-blank lines of JSON lines.
	Declared int
	// Pain001 is a pain.001 file's origin: its message, blocks and
	// transactions as its status report names them (nil for other
	// formats).
	Pain001 *payment.Pain001Origin
}

// FormatError refuses a whole file: it could not be read as its format.
type FormatError struct {
	Where  string // "line 3", "element PmtInf[2]/CdtTrfTxInf[1]/Amt"
	Detail string
}

func (e *FormatError) Error() string {
	if e.Where == "" {
		return e.Detail
	}
	return e.Where + ": " + e.Detail
}

func refuse(where, format string, args ...any) *FormatError {
	return &FormatError{Where: where, Detail: fmt.Sprintf(format, args...)}
}

// watchedReader remembers a failure to read (not EOF), so that a decoder's
// error can be told apart: a malformed file is refused, a failed read
// (too large, cut off) is returned as it is, for the caller to answer.
type watchedReader struct {
	r   io.Reader
	err error
}

func (w *watchedReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && w.err == nil {
		w.err = err
	}
	return n, err
}
