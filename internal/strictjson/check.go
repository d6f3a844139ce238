package strictjson

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/paydispatch/paydispatch/internal/plaintext"
)

var (
	timeType            = reflect.TypeFor[time.Time]()
	numberType          = reflect.TypeFor[json.Number]()
	rawType             = reflect.TypeFor[json.RawMessage]()
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// target is the Go value a JSON value lands in: its type (nil: any JSON
// value) and whether the field has the ",string" option.
type target struct {
	t      reflect.Type
	quoted bool
}

// frame is an object or array being walked.
type frame struct {
	t       reflect.Type // the Go type it lands in; nil: anything
	fields  []field      // t's members when t is a struct
	object  bool
	wantKey bool
	keys    map[string]bool // the object's keys so far, case folded
	key     string          // the object's current member
	member  target          // where the current member lands
	index   int             // the array's current element
	// custom is the type of a json.Unmarshaler the whole value is for,
	// tried once the value ends (at start in the input).
	custom reflect.Type
	start  int64
}

// walker checks one JSON value against the Go type it is decoded into,
// token by token, knowing where it is: what the decoder does not check
// (a key given twice, nesting depth), and what it reports without saying
// where or in Go's words (a wrong JSON type, an unknown field, a time
// that is not RFC 3339).
type walker struct {
	src   []byte
	dec   *json.Decoder
	stack []frame
}

// check walks b as the value of type t (a pointer to it) would be
// decoded. A syntax error ends the walk without a refusal: the decoder
// reports it with its place.
func check(b []byte, t reflect.Type) *Error {
	if t == nil || t.Kind() != reflect.Pointer {
		return nil // the decoder refuses the call itself
	}
	w := walker{src: b, dec: json.NewDecoder(bytes.NewReader(b)), stack: make([]frame, 0, 4)}
	w.dec.UseNumber()
	for {
		off := w.dec.InputOffset()
		tok, err := w.dec.Token()
		if err != nil {
			return nil
		}
		var f *frame
		if n := len(w.stack); n > 0 {
			f = &w.stack[n-1]
		}
		if key, isKey := tok.(string); isKey && f != nil && f.object && f.wantKey {
			if e := w.key(f, key); e != nil {
				return e
			}
			continue
		}
		if tok == json.Delim('}') || tok == json.Delim(']') {
			if e := w.pop(); e != nil || len(w.stack) == 0 {
				return e
			}
			continue
		}
		var tg target
		switch {
		case f == nil:
			tg = target{t: t.Elem()}
		case f.object:
			tg, f.wantKey = f.member, true
		default:
			f.index++
			if f.t != nil {
				tg = target{t: f.t.Elem()}
			}
		}
		if e := w.value(tg, tok, off); e != nil {
			return e
		}
		if len(w.stack) == 0 {
			return nil // one value; the decoder refuses what follows
		}
	}
}

// key takes an object's member name: refused when given twice (in any
// case: encoding/json matches names regardless of case, so "amount" and
// "Amount" are one field) or when the struct has no such field.
func (w *walker) key(f *frame, key string) *Error {
	f.key, f.wantKey = key, false
	folded := strings.ToLower(key)
	if f.keys == nil {
		f.keys = map[string]bool{}
	}
	if f.keys[folded] {
		return w.fail("given twice in one object")
	}
	f.keys[folded] = true
	f.member = target{}
	switch {
	case f.t == nil:
	case f.t.Kind() == reflect.Struct:
		m, ok := lookup(f.fields, key)
		if !ok {
			return w.fail("unknown field")
		}
		f.member = target{t: m.typ, quoted: m.quoted}
	case f.t.Kind() == reflect.Map:
		if d := mapKey(f.t.Key(), key); d != "" {
			return w.fail(d)
		}
		f.member = target{t: f.t.Elem()}
	}
	return nil
}

// mapKey says what is wrong with key for a map keyed by kt ("" if
// nothing), as encoding/json reads keys.
func mapKey(kt reflect.Type, key string) string {
	if reflect.PointerTo(kt).Implements(textUnmarshalerType) {
		if reflect.New(kt).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(key)) != nil {
			return "not a valid key here"
		}
		return ""
	}
	switch kt.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if _, err := strconv.ParseInt(key, 10, kt.Bits()); err != nil {
			return "want a whole number as the key"
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if _, err := strconv.ParseUint(key, 10, kt.Bits()); err != nil {
			return "want a whole number from 0 as the key"
		}
	}
	return ""
}

// value checks one value (tok, starting after off) against tg and, for
// an object or array, starts walking it.
func (w *walker) value(tg target, tok json.Token, off int64) *Error {
	t := tg.t
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	delim, open := tok.(json.Delim)
	switch {
	case tok == nil:
		return nil // null leaves the field as it is
	case t == nil || t == rawType || t.Kind() == reflect.Interface && t.NumMethod() == 0:
		if open {
			return w.push(delim, nil, nil)
		}
		return nil
	case t == timeType:
		if _, ok := tok.(string); !ok {
			return w.wrong(tok, t)
		}
		var at time.Time
		if at.UnmarshalJSON(w.raw(off)) != nil {
			return w.fail(timeDetail(tok.(string)))
		}
		return nil
	case reflect.PointerTo(t).Implements(unmarshalerType):
		// The type reads itself: let it try, and name the field when it
		// refuses (its own message speaks Go).
		if open {
			return w.push(delim, nil, t)
		}
		if reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(w.raw(off)) != nil {
			return w.fail("not a value this field takes")
		}
		return nil
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		s, ok := tok.(string)
		if !ok {
			return w.wrong(tok, reflect.TypeFor[string]())
		}
		if reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)) != nil {
			return w.fail("not a value this field takes")
		}
		return nil
	case t == numberType:
		if s, ok := tok.(string); ok && !isNumber(s) || !ok && !isNumberToken(tok) {
			return w.wrong(tok, t)
		}
		return nil
	case tg.quoted:
		s, ok := tok.(string)
		if !ok {
			return w.fail(fmt.Sprintf("want %s in a string, not %s", kind(t), jsonKind(tok)))
		}
		if d := quotedDetail(t, s); d != "" {
			return w.fail(d)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		if delim != '{' {
			return w.wrong(tok, t)
		}
		return w.push(delim, t, nil)
	case reflect.Slice, reflect.Array:
		if s, ok := tok.(string); ok && t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			if _, err := base64.StdEncoding.DecodeString(s); err != nil {
				return w.fail("want a base64 string")
			}
			return nil
		}
		if delim != '[' {
			return w.wrong(tok, t)
		}
		return w.push(delim, t, nil)
	case reflect.String:
		if _, ok := tok.(string); !ok {
			return w.wrong(tok, t)
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return w.wrong(tok, t)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		n, ok := tok.(json.Number)
		if !ok {
			return w.wrong(tok, t)
		}
		if d := numberDetail(t, string(n)); d != "" {
			return w.fail(d)
		}
	}
	// Other kinds (an interface with methods, a channel) cannot be sent
	// at all: the decoder refuses them.
	return nil
}

// push starts walking an object or array that lands in t (nil: any),
// custom being the json.Unmarshaler that reads it whole, if any.
func (w *walker) push(d json.Delim, t reflect.Type, custom reflect.Type) *Error {
	if len(w.stack) >= MaxDepth {
		return &Error{Detail: fmt.Sprintf("nests deeper than %d levels", MaxDepth)}
	}
	f := frame{t: t, object: d == '{', wantKey: d == '{', index: -1, custom: custom}
	if t != nil && t.Kind() == reflect.Struct {
		f.fields = fieldsOf(t)
	}
	if custom != nil {
		f.start = w.dec.InputOffset() - 1 // at the delimiter just read
	}
	w.stack = append(w.stack, f)
	return nil
}

// pop ends the innermost object or array, trying its Unmarshaler if it
// has one.
func (w *walker) pop() *Error {
	f := w.stack[len(w.stack)-1]
	w.stack = w.stack[:len(w.stack)-1]
	if f.custom != nil {
		raw := w.src[f.start:w.dec.InputOffset()]
		if reflect.New(f.custom).Interface().(json.Unmarshaler).UnmarshalJSON(raw) != nil {
			return w.fail("not a value this field takes")
		}
	}
	return nil
}

// raw is the scalar value just read, as sent: the input from off, where
// the token before it ended, without the separator before it.
func (w *walker) raw(off int64) []byte {
	return bytes.TrimLeft(w.src[off:w.dec.InputOffset()], " \t\r\n,:")
}

// path names where the walk is: "creditor.iban", "limits[0].period";
// "" at the top.
func (w *walker) path() string {
	var sb strings.Builder
	for i := range w.stack {
		f := &w.stack[i]
		if f.object {
			if sb.Len() > 0 {
				sb.WriteByte('.')
			}
			sb.WriteString(plaintext.Clip(f.key, 64))
		} else {
			sb.WriteByte('[')
			sb.WriteString(strconv.Itoa(f.index))
			sb.WriteByte(']')
		}
	}
	return sb.String()
}

func (w *walker) fail(detail string) *Error {
	return &Error{Field: w.path(), Detail: detail}
}

// wrong refuses a value of the wrong JSON type for t.
func (w *walker) wrong(tok json.Token, t reflect.Type) *Error {
	return w.fail(fmt.Sprintf("want %s, not %s", kind(t), jsonKind(tok)))
}

// jsonKind names a token's JSON type.
func jsonKind(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		if tok == json.Delim('[') {
			return "a JSON array"
		}
		return "a JSON object"
	case string:
		return "a JSON string"
	case json.Number:
		return "a JSON number"
	case bool:
		return "a JSON boolean"
	}
	return "null"
}

// timeDetail says why s is not a time encoding/json takes.
func timeDetail(s string) string {
	if _, err := time.Parse("2006-01-02T15:04:05.999999999", s); err == nil {
		return "no UTC offset: add Z or ±hh:mm, e.g. 2026-11-22T16:00:00Z"
	}
	return "want an RFC 3339 time with its UTC offset, e.g. 2026-11-22T16:00:00Z"
}

// numberDetail says why the JSON number s does not fit a field of type
// t ("" when it does), as encoding/json parses numbers.
func numberDetail(t reflect.Type, s string) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if _, err := strconv.ParseInt(s, 10, t.Bits()); err != nil {
			if !isWhole(s) {
				return "want a whole number, without a fraction or exponent"
			}
			return fmt.Sprintf("want a whole number from %d to %d", int64(-1)<<(t.Bits()-1), int64(math.MaxInt64>>(64-t.Bits())))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if _, err := strconv.ParseUint(s, 10, t.Bits()); err != nil {
			if !isWhole(s) {
				return "want a whole number, without a fraction or exponent"
			}
			return fmt.Sprintf("want a whole number from 0 to %d", uint64(math.MaxUint64>>(64-t.Bits())))
		}
	case reflect.Float32, reflect.Float64:
		if _, err := strconv.ParseFloat(s, t.Bits()); err != nil {
			return "want a number within range"
		}
	}
	return ""
}

// quotedDetail checks the string s sent for a ",string" field of type t.
func quotedDetail(t reflect.Type, s string) string {
	if s == "null" {
		return ""
	}
	want := "want " + kind(t) + " in a string"
	switch t.Kind() {
	case reflect.String:
		var v string
		if json.Unmarshal([]byte(s), &v) != nil {
			return "want a JSON string in a string"
		}
	case reflect.Bool:
		if s != "true" && s != "false" {
			return want
		}
	default:
		if !isNumber(s) {
			return want
		}
		return numberDetail(t, s)
	}
	return ""
}

func isWhole(s string) bool {
	return strings.Trim(strings.TrimPrefix(s, "-"), "0123456789") == ""
}

// isNumber reports whether s is a JSON number.
func isNumber(s string) bool {
	if s == "" || s[0] != '-' && (s[0] < '0' || s[0] > '9') || s[len(s)-1] < '0' || s[len(s)-1] > '9' {
		return false
	}
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil
}

func isNumberToken(tok json.Token) bool {
	_, ok := tok.(json.Number)
	return ok
}
