package railsim_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/internal/testkit/fuzzcost"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

// FuzzPacs008 feeds arbitrary bodies to the simulator's pacs.008 endpoint
// and to the parser behind it (rail.ParsePacs008, moov-io/iso20022
// underneath). Neither may panic; the endpoint accepts exactly the
// documents the parser accepts (unless one plants a refusal), and refuses
// the others with FF01.
func FuzzPacs008(f *testing.F) {
	f.Add([]byte(`<?xml version="1.0"?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:pacs.008.001.09"></Document>`))
	f.Add([]byte(`<Document>`))
	h := railsim.New(railsim.Options{}).Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzcost.Default.Check(t, len(body), func() { _, _ = rail.ParsePacs008(body) })
		tr, parseErr := rail.ParsePacs008(body)

		// A key per body: each input is a first arrival (or a resend of
		// the very same body, which gets the same answer).
		sum := sha256.Sum256(body)
		req := httptest.NewRequest(http.MethodPost, rail.PathPacs008, bytes.NewReader(body))
		req.Header.Set(rail.HeaderIdempotencyKey, hex.EncodeToString(sum[:]))
		req.Header.Set(rail.HeaderParticipantID, "p")
		req.Header.Set(rail.HeaderSequenceID, "1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		var a rail.Answer
		if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
			t.Fatalf("answer %d is not JSON: %s", rec.Code, rec.Body)
		}
		switch {
		case parseErr != nil:
			if rec.Code != http.StatusBadRequest || a.Code != "FF01" {
				t.Fatalf("a document the parser refuses (%v) answered %d %+v", parseErr, rec.Code, a)
			}
		case strings.Contains(tr.RemittanceInfo, "RAIL-REJECT:"):
			if rec.Code != http.StatusCreated && rec.Code != http.StatusUnprocessableEntity {
				t.Fatalf("planted refusal answered %d %+v", rec.Code, a)
			}
		case rec.Code != http.StatusCreated || a.Status != rail.StatusAccepted:
			t.Fatalf("a parsed document answered %d %+v", rec.Code, a)
		}
	})
}
