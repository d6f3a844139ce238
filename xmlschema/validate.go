package xmlschema

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/paydispatch/paydispatch/internal/plaintext"
)

// Error is a document that does not validate, or cannot be read as the
// UTF-8 XML a validator takes: where, and what is wrong.
type Error struct {
	Line   int
	Path   string // "Document/CstmrCdtTrfInitn/PmtInf[1]/CdtTrfTxlnf"; "" outside the root element
	Detail string // what is wrong, and what was expected
}

func (e *Error) Error() string {
	s := "line " + strconv.Itoa(e.Line)
	if e.Path != "" {
		s += ": element " + e.Path
	}
	return s + ": " + e.Detail
}

// ErrNoRoot is returned by Validator.Next when the input ends before any
// element.
var ErrNoRoot = errors.New("xmlschema: no root element")

// Validate reads a whole document from r and checks it against s.
func (s *Schema) Validate(r io.Reader) error {
	v := NewValidator(NewDecoder(r), func(xml.Name) (*Schema, error) { return s, nil })
	for {
		if _, err := v.Next(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// Validator checks a document token by token, as it is read, so that a
// caller can take what it needs from the same tokens: each token Next
// returns has been checked, and every element before it was valid. The
// schema is chosen when the root element arrives (by its namespace,
// say); an error from choose refuses the document, naming the root.
//
// Content models are walked with a counter per particle: ISO 20022
// models are deterministic and Compile keeps to the shapes for which
// that walk is exact, so each token costs constant time.
type Validator struct {
	dec    *xml.Decoder
	choose func(root xml.Name) (*Schema, error)
	s      *Schema
	stack  []frame
	phase  int // before, in or after the root element
	tokens int
	text   []byte // the text of the current simple element
	ended  []byte // the text of the simple element that ended last
	err    error
}

const (
	beforeRoot = iota
	inRoot
	afterRoot
)

type frame struct {
	decl       *elementDecl // nil: an element a wildcard skips, unchecked
	name       string
	index      int // its occurrence number when more than one may occur, else 0
	pos, count int // the particle reached in its content model, and how often it occurred
}

// NewValidator returns a validator reading tokens from dec (from
// NewDecoder, whose bounds it relies on).
func NewValidator(dec *xml.Decoder, choose func(root xml.Name) (*Schema, error)) *Validator {
	return &Validator{dec: dec, choose: choose, stack: make([]frame, 0, 16)}
}

// Next returns the next token, checked. At the end of a valid document it
// returns io.EOF; at the end of an input with no element, ErrNoRoot.
// Otherwise an error is an *Error (invalid), an *xml.SyntaxError (not
// well-formed), or the reader's own error; once an error is returned,
// every later call returns it again.
func (v *Validator) Next() (xml.Token, error) {
	if v.err != nil {
		return nil, v.err
	}
	tok, err := v.dec.Token()
	if err == nil {
		err = v.check(tok)
	} else if errors.Is(err, io.EOF) && v.phase == beforeRoot {
		err = ErrNoRoot
	}
	if err != nil {
		v.err = err
		return nil, err
	}
	return tok, nil
}

// Text returns the text of the simple-typed element whose EndElement Next
// returned last; it is valid until the next call to Next.
func (v *Validator) Text() []byte { return v.ended }

// Line is the line the decoder has reached.
func (v *Validator) Line() int {
	line, _ := v.dec.InputPos()
	return line
}

func (v *Validator) check(tok xml.Token) error {
	line, _ := v.dec.InputPos()
	first := v.tokens == 0
	v.tokens++
	switch t := tok.(type) {
	case xml.StartElement:
		return v.start(t, line)
	case xml.EndElement:
		return v.end(line)
	case xml.CharData:
		return v.charData(t, line)
	case xml.ProcInst:
		if strings.EqualFold(t.Target, "xml") && (!first || t.Target != "xml") {
			return &Error{Line: line, Path: v.path(), Detail: "an XML declaration is allowed only at the very start of the file"}
		}
	case xml.Directive:
		return &Error{Line: line, Path: v.path(), Detail: "a DTD (<!DOCTYPE>) or other <!...> declaration is refused: send the document alone"}
	case xml.Comment:
		if len(t) > MaxText {
			return &Error{Line: line, Path: v.path(), Detail: fmt.Sprintf("a comment over %d bytes", MaxText)}
		}
	}
	return nil
}

func isSpace(b []byte) bool {
	for _, c := range b {
		if !isXMLSpace(c) {
			return false
		}
	}
	return true
}

func (v *Validator) charData(t xml.CharData, line int) error {
	switch v.phase {
	case beforeRoot:
		if !isSpace(t) {
			return &Error{Line: line, Detail: fmt.Sprintf("text %q before the root element", clipText(t))}
		}
		return nil
	case afterRoot:
		if !isSpace(t) {
			return &Error{Line: line, Detail: fmt.Sprintf("content after the end of the root element: %q; a file holds one document and nothing after it", clipText(t))}
		}
		return nil
	}
	f := &v.stack[len(v.stack)-1]
	switch {
	case len(t) > MaxText || len(v.text)+len(t) > MaxText:
		return &Error{Line: line, Path: v.path(), Detail: fmt.Sprintf("a text over %d bytes", MaxText)}
	case f.decl == nil: // skipped: anything goes
	case f.decl.textType() != nil:
		v.text = append(v.text, t...)
	case !isSpace(t):
		return &Error{Line: line, Path: v.path(), Detail: fmt.Sprintf("text %q is not allowed in %s: it holds elements only", clipText(t), f.name)}
	}
	return nil
}

func clipText(t []byte) string {
	return plaintext.Clip(string(bytes.TrimSpace(t[:min(len(t), 64)])), 40)
}

func (v *Validator) start(t xml.StartElement, line int) error {
	switch v.phase {
	case afterRoot:
		return &Error{Line: line, Detail: fmt.Sprintf("a second root element %s after the end of the first: a file holds one document", plaintext.Clip(t.Name.Local, 40))}
	case beforeRoot:
		s, err := v.choose(t.Name)
		if err != nil {
			return &Error{Line: line, Path: plaintext.Clip(t.Name.Local, 40), Detail: err.Error()}
		}
		decl := s.elements[t.Name.Local]
		if decl == nil || t.Name.Space != s.ns {
			names := make([]string, 0, len(s.elements))
			for n := range s.elements {
				names = append(names, n)
			}
			return &Error{Line: line, Path: plaintext.Clip(t.Name.Local, 40), Detail: fmt.Sprintf("the root element is %s in namespace %q: want %s in namespace %q",
				plaintext.Clip(t.Name.Local, 40), plaintext.Clip(t.Name.Space, 80), strings.Join(names, " or "), s.ns)}
		}
		v.s, v.phase = s, inRoot
		return v.push(decl, t, 0, line)
	}
	if len(v.stack) >= MaxDepth {
		return &Error{Line: line, Path: v.childPath(t.Name.Local, 0), Detail: fmt.Sprintf("elements nested over %d deep", MaxDepth)}
	}
	parent := &v.stack[len(v.stack)-1]
	if parent.decl == nil {
		v.stack = append(v.stack, frame{name: t.Name.Local})
		return nil
	}
	if st := parent.decl.textType(); st != nil {
		return &Error{Line: line, Path: v.childPath(t.Name.Local, 0), Detail: fmt.Sprintf("no element is allowed in %s: it holds a value of type %s", parent.name, st.name)}
	}
	p, index, err := v.step(parent, t.Name, line)
	if err != nil {
		return err
	}
	if p.el != nil {
		return v.push(p.el, t, index, line)
	}
	// The wildcard (SupplementaryData's Envlp): lax, an element the schema
	// declares globally is checked; anything else is skipped.
	if decl := v.s.elements[t.Name.Local]; p.lax && decl != nil && t.Name.Space == v.s.ns {
		return v.push(decl, t, index, line)
	}
	v.stack = append(v.stack, frame{name: t.Name.Local, index: index})
	return nil
}

func (v *Validator) push(decl *elementDecl, t xml.StartElement, index, line int) error {
	v.stack = append(v.stack, frame{decl: decl, name: decl.name, index: index})
	v.text = v.text[:0]
	return v.attrs(decl, t.Attr, line)
}

// step moves parent's content model on by the child element name, and
// returns the particle it is, with its occurrence number for the path.
func (v *Validator) step(f *frame, name xml.Name, line int) (particle, int, error) {
	ct := f.decl.complex
	local := name.Local
	if ct.model == mAny {
		p := ct.parts[0]
		if f.count >= p.max {
			return p, 0, &Error{Line: line, Path: v.childPath(local, 0), Detail: fmt.Sprintf("%s holds at most %s", f.name, times(p.max, "element"))}
		}
		f.count++
		return p, occurrence(p, f.count), nil
	}
	if name.Space != v.s.ns {
		return particle{}, 0, &Error{Line: line, Path: v.childPath(local, 0), Detail: fmt.Sprintf("element %s is in namespace %q: want %q", plaintext.Clip(local, 40), plaintext.Clip(name.Space, 80), v.s.ns)}
	}
	i, known := ct.byName[local]
	if !known {
		return particle{}, 0, &Error{Line: line, Path: v.childPath(local, 0), Detail: fmt.Sprintf("unknown element %s in %s: expected %s", plaintext.Clip(local, 40), f.name, v.expected(f))}
	}
	p := ct.parts[i]
	if ct.model == mChoice {
		switch {
		case f.count == 0:
			f.pos = i
		case i != f.pos:
			return p, 0, &Error{Line: line, Path: v.childPath(local, 0), Detail: fmt.Sprintf("%s holds one of %s, and already has %s", f.name, v.labels(ct.parts), ct.parts[f.pos].label())}
		case f.count >= p.max:
			return p, 0, &Error{Line: line, Path: v.childPath(local, f.count+1), Detail: fmt.Sprintf("%s may occur at most %s in %s", local, times(p.max, "time"), f.name)}
		}
		f.count++
		return p, occurrence(p, f.count), nil
	}
	switch {
	case i == f.pos:
		if f.count >= p.max {
			return p, 0, &Error{Line: line, Path: v.childPath(local, f.count+1), Detail: fmt.Sprintf("%s may occur at most %s in %s", local, times(p.max, "time"), f.name)}
		}
		f.count++
	case i < f.pos:
		return p, 0, &Error{Line: line, Path: v.childPath(local, 0), Detail: fmt.Sprintf("element %s is out of order: in %s it comes before %s; expected %s", local, f.name, ct.parts[f.pos].label(), v.expected(f))}
	default:
		if cur := ct.parts[f.pos]; f.count < cur.min {
			return p, 0, &Error{Line: line, Path: v.childPath(local, 0), Detail: v.missing(cur, f.count, "before "+local)}
		}
		for j := f.pos + 1; j < i; j++ {
			if ct.parts[j].min > 0 {
				return p, 0, &Error{Line: line, Path: v.childPath(local, 0), Detail: v.missing(ct.parts[j], 0, "before "+local)}
			}
		}
		f.pos, f.count = i, 1
	}
	return p, occurrence(p, f.count), nil
}

func occurrence(p particle, n int) int {
	if p.max > 1 {
		return n
	}
	return 0
}

func times(n int, what string) string {
	if n == 1 {
		return "one " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func (v *Validator) missing(p particle, have int, where string) string {
	if have == 0 {
		return fmt.Sprintf("missing required element %s %s", p.label(), where)
	}
	return fmt.Sprintf("%s occurs %s, at least %d required, %s", p.label(), times(have, "time"), p.min, where)
}

func (v *Validator) end(line int) error {
	f := &v.stack[len(v.stack)-1]
	v.ended = nil
	if f.decl != nil {
		if st := f.decl.textType(); st != nil {
			if msg := st.check(string(v.text)); msg != "" {
				return &Error{Line: line, Path: v.path(), Detail: msg}
			}
			v.ended = v.text
		} else if msg := v.complete(f); msg != "" {
			return &Error{Line: line, Path: v.path(), Detail: msg}
		}
	}
	v.stack = v.stack[:len(v.stack)-1]
	if len(v.stack) == 0 {
		v.phase = afterRoot
	}
	return nil
}

// complete says what is missing at the end of f's content, "" if nothing.
func (v *Validator) complete(f *frame) string {
	ct := f.decl.complex
	where := "at the end of " + f.name
	switch ct.model {
	case mAny:
		if f.count < ct.parts[0].min {
			return fmt.Sprintf("%s holds at least %s: it has %d", f.name, times(ct.parts[0].min, "element"), f.count)
		}
	case mChoice:
		if f.count == 0 {
			for _, p := range ct.parts {
				if p.min == 0 {
					return ""
				}
			}
			return fmt.Sprintf("missing one of %s %s", v.labels(ct.parts), where)
		}
		if p := ct.parts[f.pos]; f.count < p.min {
			return v.missing(p, f.count, where)
		}
	case mSequence:
		if p := ct.parts[f.pos]; f.count < p.min {
			return v.missing(p, f.count, where)
		}
		for _, p := range ct.parts[f.pos+1:] {
			if p.min > 0 {
				return v.missing(p, 0, where)
			}
		}
	}
	return ""
}

// expected lists what may come next in f's content.
func (v *Validator) expected(f *frame) string {
	ct := f.decl.complex
	var names []string
	end := true
	switch ct.model {
	case mChoice:
		if f.count == 0 {
			for _, p := range ct.parts {
				names = append(names, p.label())
				end = end && p.min == 0
			}
		} else {
			p := ct.parts[f.pos]
			if f.count < p.max {
				names = append(names, p.label())
			}
			end = f.count >= p.min
		}
	case mSequence:
		p := ct.parts[f.pos]
		if f.count < p.max {
			names = append(names, p.label())
		}
		end = f.count >= p.min
		for j := f.pos + 1; end && j < len(ct.parts); j++ {
			names = append(names, ct.parts[j].label())
			end = ct.parts[j].min == 0
		}
	}
	if end {
		names = append(names, "the end of "+f.name)
	}
	return orList(names)
}

func (v *Validator) labels(ps []particle) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.label()
	}
	return orList(names)
}

func orList(names []string) string {
	const most = 10
	if len(names) > most {
		names = append(names[:most:most], fmt.Sprintf("%d more", len(names)-most))
	}
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// attrs checks an element's attributes against its type's declarations.
func (v *Validator) attrs(decl *elementDecl, attrs []xml.Attr, line int) error {
	var decls []attributeDecl
	if decl.complex != nil {
		decls = decl.complex.attrs
	}
	var seenBuf [4]bool
	var seen []bool
	if len(decls) <= len(seenBuf) {
		seen = seenBuf[:len(decls)]
	} else {
		seen = make([]bool, len(decls))
	}
	for _, a := range attrs {
		switch {
		case a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns":
			continue
		case a.Name.Space == xsiNS && (a.Name.Local == "schemaLocation" || a.Name.Local == "noNamespaceSchemaLocation"):
			continue // a hint where the schema is; the schema is ours
		case a.Name.Space == xsiNS:
			return &Error{Line: line, Path: v.path(), Detail: fmt.Sprintf("attribute xsi:%s is not accepted", plaintext.Clip(a.Name.Local, 40))}
		}
		i := -1
		if a.Name.Space == "" {
			for j := range decls {
				if decls[j].name == a.Name.Local {
					i = j
				}
			}
		}
		if i < 0 {
			name := a.Name.Local
			if a.Name.Space != "" {
				name = "{" + a.Name.Space + "}" + name
			}
			detail := fmt.Sprintf("attribute %s is not allowed on %s", plaintext.Clip(name, 80), decl.name)
			if len(decls) == 0 {
				detail += ": it has no attributes"
			}
			return &Error{Line: line, Path: v.path(), Detail: detail}
		}
		if seen[i] {
			return &Error{Line: line, Path: v.path(), Detail: fmt.Sprintf("attribute %s appears twice", decls[i].name)}
		}
		seen[i] = true
		if len(a.Value) > MaxText {
			return &Error{Line: line, Path: v.path(), Detail: fmt.Sprintf("attribute %s is over %d bytes", decls[i].name, MaxText)}
		}
		if msg := decls[i].typ.check(normalizeAttr(a.Value)); msg != "" {
			return &Error{Line: line, Path: v.path(), Detail: "attribute " + decls[i].name + ": " + msg}
		}
	}
	for i, d := range decls {
		if d.required && !seen[i] {
			return &Error{Line: line, Path: v.path(), Detail: fmt.Sprintf("missing required attribute %s (%s)", d.name, d.typ.name)}
		}
	}
	return nil
}

// normalizeAttr is XML's attribute-value normalization, which encoding/xml
// leaves out: each tab, line feed or carriage return becomes a space.
func normalizeAttr(s string) string {
	if !strings.ContainsAny(s, "\t\n\r") {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}

// path names the current element: Document/CstmrCdtTrfInitn/PmtInf[1].
func (v *Validator) path() string {
	var b strings.Builder
	for i, f := range v.stack {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(plaintext.Clip(f.name, 40))
		if f.index > 0 {
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
		}
	}
	return b.String()
}

func (v *Validator) childPath(name string, index int) string {
	p := v.path() + "/" + plaintext.Clip(name, 40)
	if index > 0 {
		p += "[" + strconv.Itoa(index) + "]"
	}
	return p
}
