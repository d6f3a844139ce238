package rail

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/txdetail"
)

// withEveryDetail is a valid instruction with every detail set (each to
// its example).
func withEveryDetail() Instruction {
	in := goodInstruction()
	for _, f := range txdetail.Fields {
		f.Set(&in.Details, f.Example())
	}
	return in
}

// TestEveryDetailReachesPacs008: an instruction with every detail of
// txdetail.Details is decoded strictly (its members known), checked,
// rendered with each detail at its ISO path, and parsed back with the
// same details: a detail is declared once, in txdetail, and no rail code
// names it.
func TestEveryDetailReachesPacs008(t *testing.T) {
	t.Parallel()
	want := withEveryDetail()
	payload, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	in, err := DecodeInstruction(payload)
	if err != nil {
		t.Fatalf("DecodeInstruction: %v", err)
	}
	if in.Details != want.Details {
		t.Fatalf("decoded %+v, want %+v", in.Details, want.Details)
	}
	if err := CheckInstruction(in, FormatPacs008); err != nil {
		t.Fatalf("CheckInstruction: %v", err)
	}
	doc, err := testPacsRail(t).Render(messageFor(in, RailPacs008))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range txdetail.Fields {
		if f.Path == nil {
			continue
		}
		element := "<" + strings.Join(f.Path, "><") + ">" + f.Example() + "</" + strings.Join(reversed(f.Path), "></") + ">"
		if !strings.Contains(string(doc), element) {
			t.Errorf("%s: want %s in\n%s", f.Name, element, doc)
		}
	}
	got, err := ParsePacs008(doc)
	if err != nil {
		t.Fatalf("ParsePacs008: %v\n%s", err, doc)
	}
	for _, f := range txdetail.Fields {
		if f.Path != nil && f.Get(&got.Details) != f.Get(&want.Details) {
			t.Errorf("%s read back as %q, want %q", f.Name, f.Get(&got.Details), f.Get(&want.Details))
		}
	}
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// TestCheckInstructionChecksEveryDetail: a detail no rule lets through is
// refused, named.
func TestCheckInstructionChecksEveryDetail(t *testing.T) {
	t.Parallel()
	for _, f := range txdetail.Fields {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			in := goodInstruction()
			f.Set(&in.Details, "\x01"+strings.Repeat("x", 300))
			err := CheckInstruction(in, FormatJSON)
			var inv *field.Invalid
			if !errors.As(err, &inv) || !inv.Has(f.Name) {
				t.Fatalf("CheckInstruction: %v; want an error naming %s", err, f.Name)
			}
		})
	}
}
