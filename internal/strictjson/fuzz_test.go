package strictjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/internal/strictjson"
	"github.com/paydispatch/paydispatch/internal/testkit/fuzzcost"
)

// goWords are what a refusal must never say: the decoder's and the time
// package's own messages, and Go's names for types.
var goWords = []string{"json:", "UnmarshalJSON", "UnmarshalText", "Go value", "Go struct", "parsing time", "time.Time", "reflect",
	"strictjson", "int64", "int8", "uint", "float64", "map[", "[]", "struct", "interface", "*", "ver:", "RawMessage"}

// FuzzDecode: any input is decoded or refused with an *Error whose
// detail speaks JSON, not Go; a refusal for a wrong type, an unknown
// field or a bad time is one encoding/json makes too (strictjson only
// says it better); and the cost is linear in the input.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"id":"a","count":2,"at":"2030-01-01T00:00:00Z","creditor":{"name":"J","iban":"DE89"},"tags":["x"],"limits":[{"period":"DAY","amount":"1.00"}]}`))
	f.Add([]byte(`{"creditor":{"iban":4}}`))
	f.Add([]byte(`{"limits":[{"period":{}}]}`))
	f.Add([]byte(`{"at":20300101}`))
	f.Add([]byte(`{"version":{"v":[1,2]}}`))
	f.Add([]byte(`{"labels":{"a":1e400}}`))
	f.Add([]byte("\xEF\xBB\xBF{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var o order
		err := strictjson.Decode(b, &o)
		if err != nil {
			var se *strictjson.Error
			if !errors.As(err, &se) {
				t.Fatalf("a refusal that is not an *Error: %T %v", err, err)
			}
			for _, w := range goWords {
				if strings.Contains(se.Detail, w) {
					t.Fatalf("the detail %q says %q", se.Detail, w)
				}
			}
			if se.Detail == "" || se.Detail == "a value does not fit the field it is sent for" {
				t.Fatalf("a refusal the walk did not foresee: %q (encoding/json: %v)", se.Detail, plainDecode(b))
			}
			typeError := strings.HasPrefix(se.Detail, "want ") || strings.HasPrefix(se.Detail, "no UTC offset") ||
				se.Detail == "unknown field" || se.Detail == "not a value this field takes"
			if typeError && plainDecode(b) == nil {
				t.Fatalf("refused (%v), yet encoding/json takes it", err)
			}
		}

		bound := fuzzcost.Default
		bound.AllocsPerByte = 4 // a token and its copy per byte, at worst
		bound.Check(t, len(b), func() { _ = strictjson.Decode(b, new(order)) })
	})
}

// plainDecode is encoding/json's verdict, with the refusals strictjson
// adds taken out of the way.
func plainDecode(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(new(order))
}
