package strictjson_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/strictjson"
)

type creditor struct {
	Name string `json:"name"`
	IBAN string `json:"iban,omitempty"`
}

type limit struct {
	Period string          `json:"period"`
	Amount json.RawMessage `json:"amount"`
}

type audited struct {
	By string `json:"by"`
}

type order struct {
	audited
	ID       string         `json:"id"`
	Count    int            `json:"count"`
	Small    int8           `json:"small"`
	Ratio    float64        `json:"ratio"`
	Urgent   bool           `json:"urgent"`
	At       time.Time      `json:"at"`
	Until    *time.Time     `json:"until"`
	Creditor creditor       `json:"creditor"`
	Tags     []string       `json:"tags"`
	Limits   []limit        `json:"limits"`
	Labels   map[string]int `json:"labels"`
	Extra    any            `json:"extra"`
	Version  ver            `json:"version"`
	Ignored  string         `json:"-"`
	internal string         //nolint:unused // unexported: the decoder must refuse its name as unknown
}

// ver reads itself: a string "vN".
type ver int

func (v *ver) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil || !strings.HasPrefix(s, "v") {
		return errors.New("ver: want \"vN\"")
	}
	n, err := strconv.Atoi(s[1:])
	*v = ver(n)
	return err
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
		{"a key twice, nested", `{"creditor":{"name":"a","name":"b"}}`, "creditor.name", "given twice"},
		{"a key twice in another case", `{"count":1,"Count":1000}`, "Count", "given twice"},
		{"the same key in two objects", `{"id":"a","creditor":{"id":"b"}}`, "creditor.id", "unknown field"},
		{"too deep", `{"extra":` + strings.Repeat(`[`, 16) + strings.Repeat(`]`, 16) + `}`, "", "deeper than 16"},
		{"deep enough", `{"extra":` + strings.Repeat(`[`, 15) + strings.Repeat(`]`, 15) + `}`, "", ""},
		{"unknown field", `{"idd":"a"}`, "idd", "unknown field"},
		{"wrong type", `{"count":"2"}`, "count", "want a whole number, not a JSON string"},
		{"wrong type nested", `{"creditor":{"name":7}}`, "creditor.name", "want a string, not a JSON number"},
		{"a number for an IBAN", `{"creditor":{"iban":4}}`, "creditor.iban", "want a string, not a JSON number"},
		{"an object in an array", `{"limits":[{"period":"DAY"},{"period":{}}]}`, "limits[1].period", "want a string, not a JSON object"},
		{"anything for a raw message", `{"limits":[{"amount":{"x":[1,true,null]}}]}`, "", ""},
		{"a string for an array", `{"tags":"x"}`, "tags", "want a JSON array, not a JSON string"},
		{"an element of the wrong type", `{"tags":["a",2]}`, "tags[1]", "want a string, not a JSON number"},
		{"a map value of the wrong type", `{"labels":{"a":1,"b":"2"}}`, "labels.b", "want a whole number, not a JSON string"},
		{"a bool for a string", `{"id":true}`, "id", "want a string, not a JSON boolean"},
		{"a string for a bool", `{"urgent":"yes"}`, "urgent", "want true or false, not a JSON string"},
		{"a fraction for a whole number", `{"count":1.5}`, "count", "without a fraction"},
		{"out of range", `{"small":300}`, "small", "from -128 to 127"},
		{"a float out of range", `{"ratio":1e999}`, "ratio", "within range"},
		{"null anywhere", `{"id":null,"creditor":null,"at":null,"tags":[null],"until":null}`, "", ""},
		{"anything for any", `{"extra":{"a":[1,"x",{}]}}`, "", ""},
		{"an embedded struct's field", `{"by":"anna"}`, "", ""},
		{"an embedded struct's field, wrong type", `{"by":1}`, "by", "want a string"},
		{"a field json ignores", `{"Ignored":"x"}`, "Ignored", "unknown field"},
		{"an unexported field", `{"internal":"x"}`, "internal", "unknown field"},
		{"a field in another case", `{"ID":"a","CREDITOR":{"Name":"J"}}`, "", ""},
		{"a wrong type in another case", `{"CREDITOR":{"Name":1}}`, "CREDITOR.Name", "want a string"},
		{"a type that reads itself", `{"version":"v2"}`, "", ""},
		{"a type that reads itself refuses", `{"version":2}`, "version", "not a value this field takes"},
		{"a type that reads itself, an object", `{"version":{"v":2}}`, "version", "not a value this field takes"},
		{"a time as a number", `{"at":20300101}`, "at", "want an RFC 3339 time string, e.g. 2026-11-22T16:00:00Z, not a JSON number"},
		{"a time as a bool", `{"at":true}`, "at", "not a JSON boolean"},
		{"a time as an object", `{"at":{}}`, "at", "not a JSON object"},
		{"a time as an array", `{"until":[]}`, "until", "not a JSON array"},
		{"a time without an offset", `{"at":"2030-01-01T00:00:00"}`, "at", "no UTC offset"},
		{"a time with an escape", `{"at":"2030-01-01T00:00:00\u005a"}`, "at", "RFC 3339"},
		{"a date for a time", `{"until":"2030-01-01"}`, "until", "RFC 3339"},
		{"a wrong type at the top", `[]`, "", "want a JSON object, not a JSON array"},
		{"a byte order mark", "\xEF\xBB\xBF{}", "", "byte order mark (U+FEFF)"},
		{"UTF-16LE", "{\x00}\x00", "", "UTF-16"},
		{"UTF-16BE with a BOM", "\xFE\xFF\x00{\x00}", "", "UTF-16"},
		{"array for object", `{"creditor":[]}`, "creditor", "want a JSON object, not a JSON array"},
		{"huge number", `{"count":1e999999}`, "count", "want a whole number"},
		{"bad time", `{"at":"tomorrow"}`, "at", "RFC 3339"},
		{"bad time, nested in a pointer", `{"until":"tomorrow"}`, "until", "RFC 3339"},
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
