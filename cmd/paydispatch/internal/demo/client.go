package demo

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"

	"github.com/paydispatch/paydispatch/client"
	"github.com/paydispatch/paydispatch/payment"
)

// newAPI is the generated client of paydispatch's API with one bearer
// token, its requests resent on 429 and 5xx.
func newAPI(base, token string, hc *http.Client) (*client.Client, error) {
	return client.NewClient(base, bearer(token), client.WithClient(retrying{hc}))
}

// bearer is a SecuritySource with one token.
type bearer string

func (b bearer) Bearer(context.Context, client.OperationName) (client.Bearer, error) {
	return client.Bearer{Token: string(b)}, nil
}

// retrying sends a request up to five times while it fails to arrive or
// is answered 429 or 5xx. Safe to resend: every write the demo makes is
// idempotent by its id.
type retrying struct{ http *http.Client }

func (r retrying) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.GetBody == nil {
		// A raw body (a bulk file) is read once: keep it to send again.
		data, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.ContentLength = int64(len(data))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
		req.Body, _ = req.GetBody()
	}
	const attempts = 5
	for attempt := range attempts {
		if attempt > 0 {
			select {
			case <-req.Context().Done():
				return nil, req.Context().Err()
			case <-time.After(time.Duration(attempt) * 500 * time.Millisecond):
			}
			if req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				req.Body = body
			}
		}
		resp, err := r.http.Do(req)
		last := attempt == attempts-1
		switch {
		case err != nil && !last:
			continue
		case err == nil && !last && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500):
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			continue
		}
		return resp, err
	}
	panic("unreachable")
}

// paymentRequest is a payment as the client sends it.
func paymentRequest(r payment.Request) client.PaymentRequest {
	out := client.PaymentRequest{
		TenantId: client.NewOptString(r.TenantID), DebtorAccount: r.DebtorAccount, Amount: r.Amount, Currency: r.Currency,
		Creditor:               client.Creditor{Name: r.Creditor.Name, Iban: r.Creditor.IBAN},
		RequestedExecutionTime: r.RequestedExecutionTime,
	}
	if r.PaymentID != "" {
		out.PaymentId = client.NewOptString(r.PaymentID)
	}
	if r.Creditor.BIC != "" {
		out.Creditor.Bic = client.NewOptString(r.Creditor.BIC)
	}
	if r.Priority != "" {
		out.Priority = client.NewOptPriority(client.Priority(r.Priority))
	}
	if r.RemittanceInfo != "" {
		out.RemittanceInfo = client.NewOptString(r.RemittanceInfo)
	}
	return out
}
