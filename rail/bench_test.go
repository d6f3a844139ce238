package rail

import "testing"

// What Validate costs per message, the relayer's check before every send.
func BenchmarkValidateJSON(b *testing.B) {
	r, _ := NewHTTPRail(Config{BaseURL: "http://127.0.0.1:1"})
	m := messageFor(goodInstruction(), RailSEPAJSON)
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Validate(m); err != nil {
			b.Fatal(err)
		}
	}
}

// Renders the document and reads it back through moov-io/iso20022.
func BenchmarkValidatePacs008(b *testing.B) {
	r, _ := NewPacs008Rail(Pacs008Config{Config: Config{BaseURL: "http://127.0.0.1:1"}})
	m := messageFor(goodInstruction(), RailPacs008)
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Validate(m); err != nil {
			b.Fatal(err)
		}
	}
}

// The rail side's reading of one document (railsim's pacs.008 endpoint).
func BenchmarkParsePacs008(b *testing.B) {
	r, _ := NewPacs008Rail(Pacs008Config{Config: Config{BaseURL: "http://127.0.0.1:1"}})
	doc, err := r.Render(messageFor(goodInstruction(), RailPacs008))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParsePacs008(doc); err != nil {
			b.Fatal(err)
		}
	}
}
