// Package txdetail declares a credit transfer's details: the optional
// fields of a payment request that the service validates, stores and
// carries to the rail without acting on them (ISO 20022 elements such as
// Purp/Cd). Each is declared once, as a field of Details with its tags;
// every shape a payment takes embeds Details (the request, its stored
// row, the saga's state, the rail's neutral instruction), and every
// format reads or writes the fields from Fields, which is derived from
// the tags at init:
//
//	json:"name,omitempty"  the member name in every JSON shape and the
//	                       CSV column; omitempty, as the field is optional
//	iso:"Purp/Cd"          the element's path within CdtTrfTxInf (pain.001
//	                       read, pacs.008 written and read) and within
//	                       OrgnlTxRef (pain.002); none: JSON and CSV only
//	check:"code,4"         the rule: code,N is 1 to N upper-case letters
//	                       or digits (an ISO 20022 external code);
//	                       text,N is at most N characters of UTF-8 text
//	                       without control characters
//
// A detail is a string; "" is none.
package txdetail

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
)

// Details are a credit transfer's details, each "" when not given.
type Details struct {
	// PurposeCode is why the payment is made, an ISO 20022
	// ExternalPurpose1Code such as SALA (salary) or SUPP (a supplier).
	PurposeCode string `json:"purposeCode,omitempty" iso:"Purp/Cd" check:"code,4"`
}

// A Field is one field of Details, as its tags declare it.
type Field struct {
	// Name is its JSON member name (and CSV column).
	Name string
	// Path is its ISO 20022 element path below CdtTrfTxInf, outermost
	// first; nil when ISO messages do not carry it.
	Path []string
	// Rule and Max: its check (code or text) and its length bound.
	Rule string
	Max  int

	index int
}

// Fields are Details' fields in declaration order.
var Fields = fieldsOf(reflect.TypeFor[Details]())

// fieldsOf reads t's tags; a field that is not a string, or whose tags
// are missing or malformed, panics at init: a declaration mistake that
// the package's tests, and every test that imports it, report at once.
func fieldsOf(t reflect.Type) []Field {
	var out []Field
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Type.Kind() != reflect.String {
			panic(fmt.Sprintf("txdetail: %s: a detail is a string", sf.Name))
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" || name == "-" || opts != "omitempty" {
			panic(fmt.Sprintf("txdetail: %s: want a json tag \"name,omitempty\"", sf.Name))
		}
		rule, n, _ := strings.Cut(sf.Tag.Get("check"), ",")
		limit, err := strconv.Atoi(n)
		if (rule != "code" && rule != "text") || err != nil || limit < 1 {
			panic(fmt.Sprintf("txdetail: %s: want a check tag \"code,N\" or \"text,N\"", sf.Name))
		}
		f := Field{Name: name, Rule: rule, Max: limit, index: i}
		if p := sf.Tag.Get("iso"); p != "" {
			f.Path = strings.Split(p, "/")
		}
		out = append(out, f)
	}
	return out
}

// Get is f's value in d.
func (f Field) Get(d *Details) string { return reflect.ValueOf(d).Elem().Field(f.index).String() }

// Set sets f's value in d.
func (f Field) Set(d *Details, v string) { reflect.ValueOf(d).Elem().Field(f.index).SetString(v) }

// Check is what is wrong with v as f's value; "" when nothing is.
func (f Field) Check(v string) string {
	if v == "" {
		return ""
	}
	switch f.Rule {
	case "code":
		if len(v) > f.Max || strings.TrimLeft(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
			return fmt.Sprintf("1 to %d upper-case letters or digits (an ISO 20022 code)", f.Max)
		}
	default:
		if utf8.RuneCountInString(v) > f.Max {
			return fmt.Sprintf("at most %d characters", f.Max)
		}
		if !plaintext.Valid(v) {
			return "UTF-8 text without control characters"
		}
	}
	return ""
}

// Check is every detail of d that its rule refuses, named by prefix and
// its JSON name.
func Check(d Details, prefix string) []field.Error {
	var out []field.Error
	for _, f := range Fields {
		if detail := f.Check(f.Get(&d)); detail != "" {
			out = append(out, field.Error{Field: prefix + f.Name, Detail: detail})
		}
	}
	return out
}

// IsZero reports whether d has no detail.
func (d Details) IsZero() bool { return d == Details{} }

// ByName is the field of a JSON name; false for none.
func ByName(name string) (Field, bool) {
	for _, f := range Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// At is the field whose ISO path is path (element names, outermost
// first); false for none. A scan of the few fields: it is asked of every
// element of a file.
func At(path []string) (Field, bool) {
	for _, f := range Fields {
		if f.Path != nil && slices.Equal(f.Path, path) {
			return f, true
		}
	}
	return Field{}, false
}
