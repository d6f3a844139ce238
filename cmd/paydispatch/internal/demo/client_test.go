package demo

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/paydispatch/paydispatch/client"
)

// TestClientResendsOn429And5xx: the demo's client sends a bulk file again,
// whole, after a 503 and a 429, and takes a 4xx as the answer.
func TestClientResendsOn429And5xx(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if string(body) != "{\"paymentId\":\"p-1\"}\n" || r.Header.Get("Authorization") != "Bearer secret" {
			t.Errorf("attempt %d: body %q, Authorization %q", calls.Load()+1, body, r.Header.Get("Authorization"))
		}
		w.Header().Set("Content-Type", "application/problem+json")
		switch calls.Add(1) {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"type":"https://paydispatch.dev/problems/unavailable","title":"Unavailable","status":503}`)
		case 2:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"type":"https://paydispatch.dev/problems/rate-limited","title":"Too many requests","status":429}`)
		default:
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = io.WriteString(w, `{"type":"https://paydispatch.dev/problems/invalid","title":"Invalid payment","status":422,"errors":[{"field":"amount","detail":"not a decimal"}]}`)
		}
	}))
	defer srv.Close()
	c, err := newAPI(srv.URL, "secret", srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Result[*client.BatchAcceptedHeaders](c.CreatePaymentBatch(context.Background(),
		&client.CreatePaymentBatchReqApplicationXNdjson{Data: bytes.NewReader([]byte("{\"paymentId\":\"p-1\"}\n"))}, client.CreatePaymentBatchParams{}))
	p, ok := err.(*client.Problem)
	if !ok || p.Status != http.StatusUnprocessableEntity || p.Errors[0].Field != "amount" || calls.Load() != 3 {
		t.Fatalf("after %d calls: %v", calls.Load(), err)
	}
}
