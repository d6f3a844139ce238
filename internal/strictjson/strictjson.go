package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/paydispatch/paydispatch/internal/plaintext"
)

// MaxDepth bounds how deeply a value may nest; no request needs more than
// 3 levels.
const MaxDepth = 16

// Error is a refused input: Field names the offending field when it is
// known, as a path from the top ("creditor.iban", "limits[0].period"),
// Detail says what is wrong with it.
type Error struct {
	Field  string
	Detail string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Detail
	}
	return e.Field + ": " + e.Detail
}

// Decode decodes b, one JSON value, into v (a non-nil pointer). Any
// refusal of b is an *Error.
func Decode(b []byte, v any) error {
	if err := checkEncoding(b); err != nil {
		return err
	}
	if err := check(b, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.Decode(&struct{}{}) != io.EOF {
		return &Error{Detail: "extra data after the JSON value"}
	}
	if err == nil {
		return nil
	}
	// check has refused every wrong type, unknown field and bad time the
	// decoder would; what is left is syntax, an empty body, or an error
	// check does not foresee, which is reported in JSON's words too.
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var inv *json.InvalidUnmarshalError
	switch {
	case errors.As(err, &inv):
		return err // the caller's mistake, not the input's
	case errors.As(err, &syn):
		return &Error{Detail: fmt.Sprintf("invalid JSON at byte %d", syn.Offset)}
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Detail: "empty or cut short; send a JSON value"}
	case errors.As(err, &typ):
		got, _, _ := strings.Cut(typ.Value, " ")
		return &Error{Field: plaintext.Clip(typ.Field, 256), Detail: fmt.Sprintf("want %s, not a JSON %s", kind(typ.Type), got)}
	}
	return &Error{Detail: "a value does not fit the field it is sent for"}
}

// checkEncoding refuses text that is not UTF-8, naming the usual causes:
// a byte order mark (encoding/json calls it invalid JSON at byte 1) and
// UTF-16 or UTF-32, whose NUL bytes are valid UTF-8.
func checkEncoding(b []byte) *Error {
	switch {
	case bytes.HasPrefix(b, []byte("\xEF\xBB\xBF")):
		return &Error{Detail: "the JSON starts with a byte order mark (U+FEFF); send UTF-8 JSON without it"}
	case bytes.HasPrefix(b, []byte("\xFE\xFF")) || bytes.HasPrefix(b, []byte("\xFF\xFE")) || len(b) >= 2 && (b[0] == 0 || b[1] == 0):
		// JSON text starts with an ASCII character, so in UTF-16 or
		// UTF-32 one of its first two bytes is 0 (RFC 4627 §3).
		return &Error{Detail: "the JSON is UTF-16 or UTF-32; send it as UTF-8"}
	case !utf8.Valid(b):
		return &Error{Detail: "not valid UTF-8"}
	}
	return nil
}

// kind names what JSON a Go type decodes from, for a caller who never
// sees the Go type.
func kind(t reflect.Type) string {
	if t == nil {
		return "another JSON value"
	}
	switch {
	case t == timeType:
		return "an RFC 3339 time string, e.g. 2026-11-22T16:00:00Z"
	case t == numberType:
		return "a number"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return "a base64 string"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "a JSON object"
	case reflect.Slice, reflect.Array:
		return "a JSON array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Pointer:
		return kind(t.Elem())
	}
	return "another JSON value"
}
