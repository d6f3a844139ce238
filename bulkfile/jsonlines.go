package bulkfile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/strictjson"

	"github.com/paydispatch/paydispatch/payment"
)

// DecodeJSONLines reads JSON lines: one payment object per line (as POST
// /v1/payments takes it), blank lines skipped. A line that is not a
// payment is reported by its number; a line over maxLine bytes, or a file
// with no payments, refuses the file. Declared counts the non-blank
// lines. ctx stops it.
//
// Lines are decoded on every core, a block at a time, while the file is
// still being read; the answer is in the file's order. Decoding (a strict
// pass and a decoding pass per line) is most of a large file's reading.
func DecodeJSONLines(ctx context.Context, r io.Reader, maxLine int) (File, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	src := &watchedReader{r: r}
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 0, min(64<<10, maxLine)), maxLine)

	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan *lineBlock, workers)
	// inOrder holds the blocks as they were read, at most 2 × workers
	// ahead of the one being gathered: memory stays bounded whatever the
	// file's size.
	inOrder := make(chan *lineBlock, 2*workers)
	for range workers {
		go func() {
			for b := range jobs {
				b.decode()
				close(b.done)
			}
		}()
	}
	readErr := make(chan error, 1)
	go func() {
		defer close(inOrder)
		defer close(jobs)
		line := 0
		b := newLineBlock()
		send := func() bool {
			select {
			case inOrder <- b:
			case <-ctx.Done():
				return false
			}
			jobs <- b
			b = newLineBlock()
			return true
		}
		for sc.Scan() {
			line++
			if line%ctxEvery == 1 && ctx.Err() != nil {
				readErr <- stopped(ctx.Err())
				return
			}
			text := bytes.TrimSpace(sc.Bytes())
			if len(text) == 0 {
				continue
			}
			b.add(line, text)
			if len(b.lines) == blockLines && !send() {
				readErr <- stopped(ctx.Err())
				return
			}
		}
		switch err := sc.Err(); {
		case src.err != nil:
			readErr <- src.err
			return
		case errors.Is(err, bufio.ErrTooLong):
			readErr <- refuse(fmt.Sprintf("line %d", line+1), "over %d bytes: one payment per line", maxLine)
			return
		case err != nil:
			readErr <- err
			return
		}
		if len(b.lines) > 0 && !send() {
			readErr <- stopped(ctx.Err())
			return
		}
		readErr <- nil
	}()

	// The blocks are joined once all are decoded: appending each to the
	// file's payments as it came copied them all about twice over.
	var blocks []*lineBlock
	var f File
	n := 0
	for b := range inOrder {
		<-b.done
		blocks = append(blocks, b)
		f.Declared += len(b.lines)
		n += len(b.requests)
		f.Bad = append(f.Bad, b.bad...)
	}
	if err := <-readErr; err != nil {
		return File{}, err
	}
	if n > 0 {
		f.Requests, f.Places = make([]payment.Request, 0, n), make([]int, 0, n)
		for _, b := range blocks {
			f.Requests, f.Places = append(f.Requests, b.requests...), append(f.Places, b.places...)
		}
	}
	if len(f.Requests) == 0 && len(f.Bad) == 0 {
		return File{}, refuse("", "the file has no payments: want one JSON payment object per line")
	}
	return f, nil
}

// blockLines is how many lines a worker decodes at a time.
const blockLines = 2048

// lineGuess is a payment's line in bytes, about: a block's buffer starts
// at blockLines of them rather than growing to them.
const lineGuess = 256

// lineBlock is a run of a file's non-blank lines and, once done is
// closed, what they decoded to.
type lineBlock struct {
	buf      []byte // the lines' bytes, one after the other
	ends     []int  // where each line ends in buf
	lines    []int  // each line's number in the file
	requests []payment.Request
	places   []int
	bad      []payment.LineError
	done     chan struct{}
}

func newLineBlock() *lineBlock {
	return &lineBlock{done: make(chan struct{}), lines: make([]int, 0, blockLines), ends: make([]int, 0, blockLines),
		buf: make([]byte, 0, blockLines*lineGuess)}
}

// add copies a line in: the scanner reuses its buffer.
func (b *lineBlock) add(line int, text []byte) {
	b.buf = append(b.buf, text...)
	b.ends = append(b.ends, len(b.buf))
	b.lines = append(b.lines, line)
}

func (b *lineBlock) decode() {
	b.requests = make([]payment.Request, 0, len(b.lines))
	b.places = make([]int, 0, len(b.lines))
	start := 0
	for i, line := range b.lines {
		text := b.buf[start:b.ends[i]]
		start = b.ends[i]
		req, err := payment.DecodeRequest(text)
		if err != nil {
			fe := field.Error{Field: "line", Detail: "not a payment: " + err.Error()}
			var se *strictjson.Error
			if errors.As(err, &se) && se.Field != "" {
				fe = field.Error{Field: se.Field, Detail: se.Detail}
			}
			b.bad = append(b.bad, payment.LineError{Line: line, Fields: []field.Error{fe}})
			continue
		}
		b.requests = append(b.requests, req)
		b.places = append(b.places, line)
	}
	b.buf = nil
}
