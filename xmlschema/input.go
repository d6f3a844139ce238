package xmlschema

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/paydispatch/paydispatch/internal/plaintext"
)

// The bounds on a document from outside. Whatever the input, validating it
// costs time linear in its size and memory bounded by these (and by the
// schema), never by what the input chooses.
const (
	// MaxDepth bounds the nesting of elements (ISO 20022 messages nest
	// about fifteen deep).
	MaxDepth = 64
	// MaxText bounds one text node, attribute value or comment, in bytes
	// (ISO 20022's longest type, Max10KBinary, is 10,240 octets: under
	// 14 KiB of base64).
	MaxText = 64 << 10
	// maxRun bounds the bytes between two '<': it keeps encoding/xml from
	// buffering a huge text node or start tag before the validator sees
	// it. It leaves room for markup around a MaxText value, so that the
	// validator's error, which names the element, usually comes first.
	maxRun = MaxText + 4<<10
)

// NewDecoder returns a strict encoding/xml Decoder for a document from
// outside, which it reads as UTF-8 only: a UTF-8 byte order mark is
// skipped; a UTF-16 or UTF-32 one, an XML declaration naming another
// encoding, or bytes that are not UTF-8 stop the decoder with an *Error
// saying so. Between two '<' it reads at most MaxText and a little more.
// encoding/xml expands no external entity; Validator refuses any DTD.
func NewDecoder(r io.Reader) *xml.Decoder {
	g := &guard{br: bufio.NewReader(r), line: 1}
	dec := xml.NewDecoder(g)
	dec.Strict = true
	dec.CharsetReader = func(charset string, in io.Reader) (io.Reader, error) {
		// encoding/xml takes "utf-8" in any case itself; "utf8" is the
		// same encoding by another name.
		if strings.EqualFold(charset, "utf8") {
			return in, nil
		}
		line, _ := dec.InputPos()
		return nil, &Error{Line: line, Detail: fmt.Sprintf("the XML declaration names the encoding %q: only UTF-8 is accepted; send the file as UTF-8", plaintext.Clip(charset, 32))}
	}
	return dec
}

// guard checks the bytes on their way to encoding/xml: UTF-8 throughout,
// and no run of over maxRun bytes without a '<'.
type guard struct {
	br      *bufio.Reader
	started bool
	err     error
	line    int     // line of the next byte
	run     int     // bytes since the last '<'
	carry   [3]byte // the start of a UTF-8 sequence cut by a read
	nc      int
}

func (g *guard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if !g.started {
		g.started = true
		if err := g.start(); err != nil {
			g.err = err
			return 0, err
		}
	}
	if len(p) <= len(g.carry) {
		return 0, io.ErrShortBuffer // encoding/xml reads through a bufio.Reader: 4 KiB at a time
	}
	k := copy(p, g.carry[:g.nc])
	g.nc = 0
	n, err := g.br.Read(p[k:])
	b := p[:k+n]
	bad, cut := checkUTF8(b)
	if bad >= 0 {
		g.err = &Error{Line: g.line + bytes.Count(b[:bad], []byte{'\n'}), Detail: fmt.Sprintf("the file is not valid UTF-8 (byte 0x%02X): only UTF-8 is accepted", b[bad])}
		return 0, g.err
	}
	if cut > 0 {
		// Hold a sequence cut by the read back until the rest arrives, so
		// that encoding/xml never sees half of it.
		if err != nil {
			g.err = err
			if err == io.EOF {
				g.err = &Error{Line: g.line + bytes.Count(b, []byte{'\n'}), Detail: "the file ends inside a UTF-8 sequence: only UTF-8 is accepted"}
			}
			return 0, g.err
		}
		g.nc = copy(g.carry[:], b[len(b)-cut:])
		b = b[:len(b)-cut]
	}
	if at := g.checkRun(b); at >= 0 {
		g.err = &Error{Line: g.line + bytes.Count(b[:at], []byte{'\n'}), Detail: fmt.Sprintf("over %d bytes without markup: a text, attribute value or comment may have at most %d", maxRun, MaxText)}
		return 0, g.err
	}
	g.line += bytes.Count(b, []byte{'\n'})
	return len(b), err
}

// start looks at the first bytes for a byte order mark or the NULs of a
// 16- or 32-bit encoding.
func (g *guard) start() error {
	head, _ := g.br.Peek(4) // fewer at the end of a short input; a read error comes back from Read
	switch {
	case bytes.HasPrefix(head, []byte{0xEF, 0xBB, 0xBF}):
		_, _ = g.br.Discard(3)
	case bytes.HasPrefix(head, []byte{0xFE, 0xFF}), bytes.HasPrefix(head, []byte{0xFF, 0xFE}):
		return &Error{Line: 1, Detail: "the file starts with a UTF-16 byte order mark: only UTF-8 is accepted; send the file as UTF-8"}
	case bytes.IndexByte(head, 0) >= 0:
		return &Error{Line: 1, Detail: "the file starts with NUL bytes, as UTF-16 or UTF-32 would: only UTF-8 is accepted; send the file as UTF-8"}
	}
	return nil
}

// checkUTF8 returns the index of the first byte of b that cannot be
// UTF-8 (-1 if none), and the length of a sequence cut at its end.
func checkUTF8(b []byte) (bad, cut int) {
	if utf8.Valid(b) {
		return -1, 0
	}
	for j := 0; j < len(b); {
		if b[j] < utf8.RuneSelf {
			j++
			continue
		}
		r, size := utf8.DecodeRune(b[j:])
		if r == utf8.RuneError && size == 1 {
			if !utf8.FullRune(b[j:]) {
				return -1, len(b) - j
			}
			return j, 0
		}
		j += size
	}
	return -1, 0
}

// checkRun returns the index in b where a run without '<' grows over
// maxRun, or -1.
func (g *guard) checkRun(b []byte) int {
	off := 0
	for off < len(b) {
		k := bytes.IndexByte(b[off:], '<')
		if k < 0 {
			k = len(b) - off
		}
		if g.run+k > maxRun {
			return off + maxRun - g.run
		}
		if off+k == len(b) {
			g.run += k
			return -1
		}
		g.run = 0
		off += k + 1
	}
	return -1
}
