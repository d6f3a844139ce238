package screening_test

import (
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/screening"
)

// FuzzDecodeAnswer: whatever the service answers, every payment asked
// about gets exactly one verdict of the three, an ERROR always says why,
// a HIT never loses its place to a CLEAR of an id answered twice, and
// what goes into a status reason is printable and bounded.
func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range []string{
		`{"results":[{"id":"a","verdict":"CLEAR"},{"id":"b","verdict":"HIT","list":"EU","reason":"name"}]}`,
		`{"results":[{"id":"a","verdict":"ERROR","reason":"down"}]}`,
		`{"results":[{"id":"a","verdict":"HIT"},{"id":"a","verdict":"CLEAR"}]}`,
		`{"results":[{"id":"x","verdict":"CLEAR"}]}`,
		`{"results":[{"id":"a","verdict":"clear"}]}`,
		`{"results":null}`, `{}`, `[]`, `null`, ``, `{"results":[{"id":"a","verdict":"CLEAR"}]} {}`,
		`{"results":[{"id":"b","verdict":"HIT","list":"\u0007\u0000","reason":"` + strings.Repeat("é", 300) + `"}]}`,
	} {
		f.Add([]byte(s))
	}
	ids := []string{"a", "b", "c"}
	f.Fuzz(func(t *testing.T, body []byte) {
		res, err := screening.DecodeAnswer(body, ids)
		if len(res) != len(ids) {
			t.Fatalf("%d results for %d ids", len(res), len(ids))
		}
		for i, r := range res {
			switch r.Verdict {
			case screening.Clear, screening.Hit:
				if err != nil {
					t.Fatalf("id %s: %s from an answer refused (%v)", ids[i], r.Verdict, err)
				}
			case screening.Error:
				if r.Reason == "" {
					t.Fatalf("id %s: an ERROR without a reason", ids[i])
				}
			default:
				t.Fatalf("id %s: verdict %q", ids[i], r.Verdict)
			}
			for _, s := range []string{r.List, r.Reason} {
				if !plaintext.Valid(s) || len(s) > 250 {
					t.Fatalf("id %s: %q is not fit for a status reason", ids[i], s)
				}
			}
		}
	})
}
