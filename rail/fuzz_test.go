package rail

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/testkit/fuzzcost"
)

// FuzzDecodeInstruction feeds arbitrary payloads to the decoder and the
// checks. Beyond not panicking: whatever passes them must survive a JSON
// round trip unchanged, and must render to a pacs.008 document that the
// rail side's parser accepts with the very same amount, so the validator
// never lets through what a rail would refuse as malformed.
func FuzzDecodeInstruction(f *testing.F) {
	good, _ := json.Marshal(goodInstruction())
	f.Add(good)
	f.Add([]byte(`{"amount":"1e3"}`))
	f.Add([]byte(`{"amount":"1.00","AMOUNT":"1000.00"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		fuzzcost.Default.Check(t, len(payload), func() {
			if in, err := DecodeInstruction(payload); err == nil {
				_ = CheckInstruction(in, FormatPacs008)
			}
		})
		in, err := DecodeInstruction(payload)
		if err != nil {
			var ve *field.Invalid
			if !errors.As(err, &ve) || len(ve.Fields) == 0 {
				t.Fatalf("decode error is not a *field.Invalid: %v", err)
			}
			return
		}
		if err := CheckInstruction(in, FormatJSON); err != nil {
			return
		}
		again, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeInstruction(again)
		if err != nil || !reflect.DeepEqual(back, in) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, in, back)
		}
		if CheckInstruction(in, FormatPacs008) != nil {
			return
		}
		m := messageFor(in, RailPacs008)
		doc, err := renderPacs008(m, in, "SLEV", time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatalf("a valid instruction does not render: %v", err)
		}
		tr, err := ParsePacs008(doc)
		if err != nil {
			t.Fatalf("a valid instruction renders to a document the rail refuses: %v\n%s", err, doc)
		}
		amount, _ := ParseAmount(in.Amount)
		if !tr.Amount.Equal(amount) || tr.Currency != in.Currency || tr.EndToEndID != in.EndToEndID || tr.RemittanceInfo != in.RemittanceInfo {
			t.Fatalf("the rail reads %s %s %q %q, the instruction says %s %s %q %q", tr.Amount, tr.Currency, tr.EndToEndID, tr.RemittanceInfo, in.Amount, in.Currency, in.EndToEndID, in.RemittanceInfo)
		}
	})
}
