package payment

import (
	"reflect"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/paydispatch/paydispatch/internal/strictjson"
)

// DecodeRequest reads one payment sent as JSON (the body of POST
// /v1/payments, a line of a JSON-lines file). A body that is not a
// payment's JSON is refused with a *strictjson.Error naming the field;
// whether the payment is valid is Validate's business.
func DecodeRequest(b []byte) (Request, error) {
	if r, ok := decodePlain(b); ok {
		return r, nil
	}
	var r Request
	if err := strictjson.Decode(b, &r); err != nil {
		return Request{}, err
	}
	return r, nil
}

// decodePlain reads a payment's JSON in the form nearly every line of a
// bulk file has, in one pass over its bytes: one object of Request's
// member names, each once and spelt as tagged, every value a string
// without escapes (creditor an object of the same kind). strictjson's
// walk and encoding/json's decode cost eight times as much, and a file of
// 500,000 payments is decoded on the intake's clock.
//
// It answers ok only where strictjson.Decode takes b and decodes it to
// the same Request (FuzzDecodePlain holds it to that). Anything else (an
// escape, a null, a name in another case, any mistake) is left to
// strictjson, which judges it and names what is wrong.
func decodePlain(b []byte) (r Request, ok bool) {
	if !utf8.Valid(b) {
		return Request{}, false
	}
	s := plainScanner{b: b}
	if !s.object(requestMembers, unsafe.Pointer(&r)) {
		return Request{}, false
	}
	s.space()
	if s.i != len(s.b) {
		return Request{}, false
	}
	return r, true
}

// plainKind is how decodePlain takes a member's value.
type plainKind int

const (
	plainText   plainKind = iota // a string (or a type whose kind is string)
	plainTime                    // time.Time, by its UnmarshalJSON
	plainObject                  // a struct, by its own members
)

// plainMember is a member decodePlain takes: where its field lies in its
// struct, and how its value is read.
type plainMember struct {
	name   string
	path   string // its JSON path from the request ("creditor.iban")
	kind   plainKind
	offset uintptr
	object *plainMembers
}

// plainMembers are a struct's members, by name.
type plainMembers struct {
	list   []plainMember
	byName map[string]int
}

// requestMembers are Request's, derived from its type once: a field added
// to Request (or to txdetail.Details, which it embeds) is taken without a
// change here. A field of a kind decodePlain cannot read is left out, and
// its member sends the payment to strictjson (TestDecodePlainTakesEveryField
// fails on it).
var requestMembers = membersOf(reflect.TypeFor[Request](), "")

func membersOf(t reflect.Type, prefix string) *plainMembers {
	ms := &plainMembers{byName: map[string]int{}}
	var walk func(t reflect.Type, base uintptr)
	walk = func(t reflect.Type, base uintptr) {
		for i := range t.NumField() {
			sf := t.Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			switch {
			case sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct:
				walk(sf.Type, base+sf.Offset)
				continue
			case !sf.IsExported() || name == "-":
				continue
			case name == "":
				name = sf.Name
			}
			m := plainMember{name: name, path: prefix + name, offset: base + sf.Offset}
			switch {
			case sf.Type == reflect.TypeFor[time.Time]():
				m.kind = plainTime
			case sf.Type.Kind() == reflect.String:
				m.kind = plainText
			case sf.Type.Kind() == reflect.Struct:
				m.kind, m.object = plainObject, membersOf(sf.Type, m.path+".")
			default:
				continue
			}
			ms.byName[name] = len(ms.list)
			ms.list = append(ms.list, m)
		}
	}
	walk(t, 0)
	return ms
}

// object takes an object of ms's members into the struct at base, each
// member once.
func (s *plainScanner) object(ms *plainMembers, base unsafe.Pointer) bool {
	var buf [32]bool
	seen := buf[:]
	if len(ms.list) > len(buf) {
		seen = make([]bool, len(ms.list))
	}
	return s.members(func(name []byte) bool {
		i, ok := ms.byName[string(name)]
		if !ok || seen[i] {
			return false
		}
		seen[i] = true
		m := &ms.list[i]
		at := unsafe.Add(base, m.offset)
		switch m.kind {
		case plainObject:
			return s.object(m.object, at)
		case plainTime:
			// As encoding/json decodes a time: the quoted literal to
			// time.Time's own UnmarshalJSON.
			raw, ok := s.quoted()
			return ok && (*time.Time)(at).UnmarshalJSON(raw) == nil
		}
		return s.stringInto((*string)(at))
	})
}

// plainScanner reads the plain JSON decodePlain takes; every method
// answers false on anything else.
type plainScanner struct {
	b []byte
	i int
}

// space skips JSON's whitespace.
func (s *plainScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// token takes the byte c after any whitespace.
func (s *plainScanner) token(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// quoted takes a string without escapes or control characters, quotes
// included.
func (s *plainScanner) quoted() ([]byte, bool) {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	for j := s.i + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			raw := s.b[s.i : j+1]
			s.i = j + 1
			return raw, true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// stringInto takes a string into dst.
func (s *plainScanner) stringInto(dst *string) bool {
	raw, ok := s.quoted()
	if ok {
		*dst = string(raw[1 : len(raw)-1])
	}
	return ok
}

// members takes an object, giving each member's name to member, which
// takes its value.
func (s *plainScanner) members(member func(name []byte) bool) bool {
	if !s.token('{') {
		return false
	}
	if s.token('}') {
		return true
	}
	for {
		name, ok := s.quoted()
		if !ok || !s.token(':') || !member(name[1:len(name)-1]) {
			return false
		}
		if s.token('}') {
			return true
		}
		if !s.token(',') {
			return false
		}
	}
}

// A RequestField is a member of a Request that a flat format (CSV) reads,
// a text or a time, named by its JSON path ("creditor.iban").
type RequestField struct{ m plainMember }

// Path is the field's JSON path.
func (f RequestField) Path() string { return f.m.path }

// IsTime reports whether the field is a time (SetTime sets it); else it
// is a text (Set).
func (f RequestField) IsTime() bool { return f.m.kind == plainTime }

// Set sets a text field of r.
func (f RequestField) Set(r *Request, v string) {
	if f.m.kind != plainText {
		panic("payment: " + f.m.path + " is not a text")
	}
	*(*string)(unsafe.Add(unsafe.Pointer(r), f.m.offset)) = v
}

// SetTime sets a time field of r.
func (f RequestField) SetTime(r *Request, t time.Time) {
	if f.m.kind != plainTime {
		panic("payment: " + f.m.path + " is not a time")
	}
	*(*time.Time)(unsafe.Add(unsafe.Pointer(r), f.m.offset)) = t
}

// RequestFields are Request's text and time members in declaration
// order, a nested object's flattened in its place: what a flat format
// derives its columns from.
func RequestFields() []RequestField { return flatFields(requestMembers, 0) }

func flatFields(ms *plainMembers, base uintptr) []RequestField {
	var out []RequestField
	for _, m := range ms.list {
		m.offset += base
		if m.kind == plainObject {
			out = append(out, flatFields(m.object, m.offset)...)
			continue
		}
		out = append(out, RequestField{m: m})
	}
	return out
}
