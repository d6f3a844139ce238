package xmlschema_test

import (
	"bytes"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/paydispatch/paydispatch/internal/testkit/fuzzcost"
)

// FuzzValidate: whatever the input, Validate returns, at a cost linear in
// the input's size, with an error that is valid UTF-8, and the same
// verdict however the input is cut into reads (not always the same error:
// read a byte at a time, a token may be complete before a bad byte after
// it is seen).
func FuzzValidate(f *testing.F) {
	for _, tt := range validationCases {
		f.Add([]byte(tt.doc))
	}
	s := testSchema()
	f.Fuzz(func(t *testing.T, b []byte) {
		var err error
		fuzzcost.Default.Check(t, len(b), func() { err = s.Validate(bytes.NewReader(b)) })
		if err != nil && !utf8.ValidString(err.Error()) {
			t.Fatalf("an error that is not UTF-8: %q", err)
		}
		again := s.Validate(iotest.OneByteReader(bytes.NewReader(b)))
		if (err == nil) != (again == nil) {
			t.Fatalf("read whole: %v\nread a byte at a time: %v", err, again)
		}
	})
}
