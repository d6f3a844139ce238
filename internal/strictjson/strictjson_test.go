package strictjson_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/strictjson"
)

type creditor struct {
	Name string `json:"name"`
}

type order struct {
	ID       string    `json:"id"`
	Count    int       `json:"count"`
	At       time.Time `json:"at"`
	Creditor creditor  `json:"creditor"`
	Tags     []string  `json:"tags"`
}

func TestDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in   string
		wantField  string
		wantDetail string // "" for accepted
	}{
		{"accepted", `{"id":"a","count":2,"at":"2030-01-01T00:00:00Z","creditor":{"name":"J"},"tags":["x"]}`, "", ""},
		{"accepted with spaces", " {\"id\" : \"a\"}\n", "", ""},
		{"empty", ``, "", "empty"},
		{"cut short", `{"id":"a"`, "", "empty or cut short"},
		{"syntax", `{"id":a}`, "", "invalid JSON at byte 7"},
		{"not UTF-8", "{\"id\":\"\xff\"}", "", "not valid UTF-8"},
		{"a key twice", `{"id":"a","id":"b"}`, "id", "given twice"},
		{"a key twice, nested", `{"creditor":{"name":"a","name":"b"}}`, "name", "given twice"},
		{"a key twice in another case", `{"count":1,"Count":1000}`, "Count", "given twice"},
		{"the same key in two objects", `{"id":"a","creditor":{"id":"b"}}`, "id", "unknown field"},
		{"too deep", strings.Repeat(`[`, 17) + strings.Repeat(`]`, 17), "", "deeper than 16"},
		{"unknown field", `{"idd":"a"}`, "idd", "unknown field"},
		{"wrong type", `{"count":"2"}`, "count", "want a whole number, not a JSON string"},
		{"wrong type nested", `{"creditor":{"name":7}}`, "creditor.name", "want a string, not a JSON number"},
		{"array for object", `{"creditor":[]}`, "creditor", "want a JSON object, not a JSON array"},
		{"huge number", `{"count":1e999999}`, "count", "want a whole number"},
		{"bad time", `{"at":"tomorrow"}`, "at", "RFC 3339"},
		{"trailing data", `{"id":"a"} {"id":"b"}`, "", "extra data"},
		{"NUL byte", "{\"id\":\"a\x00\"}", "", "invalid JSON"},
		{"a long unknown key is clipped", `{"` + strings.Repeat("k", 500) + `":1}`, strings.Repeat("k", 64) + "…", "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var o order
			err := strictjson.Decode([]byte(tt.in), &o)
			if tt.wantDetail == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var se *strictjson.Error
			if !errors.As(err, &se) {
				t.Fatalf("got %v (%T), want a *strictjson.Error", err, err)
			}
			if se.Field != tt.wantField || !strings.Contains(se.Detail, tt.wantDetail) {
				t.Fatalf("got field %q detail %q, want field %q detail containing %q", se.Field, se.Detail, tt.wantField, tt.wantDetail)
			}
		})
	}
}

func TestDepthLimit(t *testing.T) {
	t.Parallel()
	for depth, wantErr := range map[int]bool{1: false, 16: false, 17: true, 100000: true} {
		var v any
		err := strictjson.Decode([]byte(strings.Repeat("[", depth)+strings.Repeat("]", depth)), &v)
		if (err != nil) != wantErr {
			t.Errorf("depth %d: %v, want an error: %v", depth, err, wantErr)
		}
	}
}

func ExampleDecode() {
	var v struct {
		Amount string `json:"amount"`
	}
	fmt.Println(strictjson.Decode([]byte(`{"amount":"1.00","amount":"1000.00"}`), &v))
	fmt.Println(strictjson.Decode([]byte(`{"amount":12.5}`), &v))
	fmt.Println(strictjson.Decode([]byte(`{"amout":"1.00"}`), &v))
	// Output:
	// amount: given twice in one object
	// amount: want a string, not a JSON number
	// amout: unknown field
}
