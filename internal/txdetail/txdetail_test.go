package txdetail

import (
	"reflect"
	"strings"
	"testing"
)

func TestCheckRules(t *testing.T) {
	t.Parallel()
	code := Field{Name: "c", Rule: "code", Max: 4}
	text := Field{Name: "t", Rule: "text", Max: 5}
	tests := []struct {
		f    Field
		v    string
		want string // a part of the detail; "" valid
	}{
		{code, "", ""},
		{code, "SALA", ""},
		{code, "A1", ""},
		{code, "sala", "upper-case"},
		{code, "SALAR", "1 to 4"},
		{code, "SA A", "upper-case"},
		{code, "ÄBC", "upper-case"},
		{text, "héllo", ""},
		{text, "toolong", "at most 5"},
		{text, "a\x01b", "control"},
	}
	for _, tt := range tests {
		got := tt.f.Check(tt.v)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s %q: %q, want %q", tt.f.Rule, tt.v, got, tt.want)
		}
	}
}

// TestFieldsOfRefusesMistakes: a detail declared without its tags, or
// not as a string, stops the program at init rather than being left out
// of a format.
func TestFieldsOfRefusesMistakes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		v    any
	}{
		{"no json tag", struct {
			A string `check:"code,4"`
		}{}},
		{"not omitempty", struct {
			A string `json:"a" check:"code,4"`
		}{}},
		{"no check", struct {
			A string `json:"a,omitempty"`
		}{}},
		{"an unknown rule", struct {
			A string `json:"a,omitempty" check:"iban,34"`
		}{}},
		{"not a string", struct {
			A int `json:"a,omitempty" check:"code,4"`
		}{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if recover() == nil {
					t.Fatal("taken")
				}
			}()
			fieldsOf(reflect.TypeOf(tt.v))
		})
	}
	fs := fieldsOf(reflect.TypeOf(struct {
		A string `json:"a,omitempty" iso:"Purp/Cd" check:"code,4"`
		B string `json:"b,omitempty" check:"text,140"`
	}{}))
	if len(fs) != 2 || strings.Join(fs[0].Path, "/") != "Purp/Cd" || fs[1].Path != nil || fs[1].Max != 140 {
		t.Fatalf("read %+v", fs)
	}
}
