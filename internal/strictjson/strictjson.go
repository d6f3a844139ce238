package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/paydispatch/paydispatch/internal/plaintext"
)

// MaxDepth bounds how deeply a value may nest; no request needs more than
// 3 levels.
const MaxDepth = 16

// Error is a refused input: Field names the offending field when it is
// known ("creditor.iban"), Detail says what is wrong with it.
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

// Decode decodes b, one JSON value, into v. Any refusal is an *Error.
func Decode(b []byte, v any) error {
	if err := checkShape(b); err != nil {
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
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tpe *time.ParseError
	switch {
	case errors.As(err, &syn):
		return &Error{Detail: fmt.Sprintf("invalid JSON at byte %d", syn.Offset)}
	case errors.As(err, &typ):
		return &Error{Field: typ.Field, Detail: fmt.Sprintf("want %s, not a JSON %s", kind(typ.Type), typ.Value)}
	case errors.As(err, &tpe) || strings.Contains(err.Error(), "parsing time"):
		return &Error{Field: timeField(v), Detail: "want an RFC 3339 time, e.g. 2026-11-22T16:00:00Z"}
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Detail: "empty or cut short; send a JSON value"}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &Error{Field: plaintext.Clip(name, 64), Detail: "unknown field"}
	}
	return &Error{Detail: strings.TrimPrefix(err.Error(), "json: ")}
}

// checkShape checks what the decoder does not. Syntax errors are left to
// the decoder, which names their place.
func checkShape(b []byte) *Error {
	if !utf8.Valid(b) {
		return &Error{Detail: "not valid UTF-8"}
	}
	type frame struct {
		object, wantKey bool
		keys            map[string]bool
	}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF, or a syntax error the decoder reports
		}
		var top *frame
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		if key, isKey := tok.(string); isKey && top != nil && top.object && top.wantKey {
			// encoding/json matches names regardless of case, so "amount"
			// and "Amount" in one object are the same field given twice.
			folded := strings.ToLower(key)
			if top.keys[folded] {
				return &Error{Field: plaintext.Clip(key, 64), Detail: "given twice in one object"}
			}
			top.keys[folded], top.wantKey = true, false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= MaxDepth {
				return &Error{Detail: fmt.Sprintf("nests deeper than %d levels", MaxDepth)}
			}
			stack = append(stack, &frame{object: tok == json.Delim('{'), wantKey: tok == json.Delim('{'), keys: map[string]bool{}})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].wantKey = true
			}
		default:
			if top != nil && top.object {
				top.wantKey = true
			}
		}
	}
}

// kind names what JSON a Go type decodes from, for a caller who never
// sees the Go type.
func kind(t reflect.Type) string {
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

// timeField names v's time field when it has exactly one at the top
// level: encoding/json does not say which field a time failed in.
func timeField(v any) string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return ""
	}
	timeType, name := reflect.TypeOf(time.Time{}), ""
	for i := range t.NumField() {
		f := t.Field(i)
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft != timeType {
			continue
		}
		if name != "" {
			return ""
		}
		name, _, _ = strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
	}
	return name
}
