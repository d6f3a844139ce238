package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/paydispatch/paydispatch/payment"
)

// Payments is what the payment endpoints need.
type Payments interface {
	Submit(ctx context.Context, r payment.Request) (string, error)
	Status(ctx context.Context, id string) (payment.View, error)
}

// maxBody bounds a single payment request.
const maxBody = 64 << 10

// HandlePayments adds POST /v1/payments and GET /v1/payments/{id}.
func (rt *Router) HandlePayments(p Payments) {
	rt.Handle("POST /v1/payments", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req payment.Request
		if prob := decodeJSON(w, r, &req); prob != nil {
			WriteProblem(w, r, *prob)
			return
		}
		id, err := p.Submit(r.Context(), req)
		var ve *payment.ValidationError
		switch {
		case errors.As(err, &ve):
			prob := Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid payment",
				Detail: fmt.Sprintf("%d field(s) need fixing; nothing was stored", len(ve.Fields))}
			for _, f := range ve.Fields {
				prob.Errors = append(prob.Errors, FieldError(f))
			}
			WriteProblem(w, r, prob)
		case errors.Is(err, payment.ErrConflict):
			WriteProblem(w, r, Problem{Status: http.StatusConflict, Title: "Payment id already used",
				Detail: "paymentId " + req.PaymentID + " belongs to a different payment; use a new id"})
		case err != nil:
			rt.log.Error("payment submission failed", "error", err)
			WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the payment could not be accepted now; retry with the same paymentId"})
		default:
			w.Header().Set("Location", "/v1/payments/"+id)
			WriteJSON(w, http.StatusAccepted, map[string]string{"paymentId": id, "status": string(payment.StatusReceived), "statusUrl": "/v1/payments/" + id})
		}
	}))
	rt.Handle("GET /v1/payments/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		v, err := p.Status(r.Context(), id)
		switch {
		case errors.Is(err, payment.ErrNotFound):
			WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no payment " + id})
		case err != nil:
			rt.log.Error("payment status failed", "error", err)
			WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "status unavailable; retry"})
		default:
			WriteJSON(w, http.StatusOK, v)
		}
	}))
}

// decodeJSON reads one JSON object, refusing unknown fields, trailing data
// and oversized bodies, with a problem that says where it went wrong.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) *Problem {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return &Problem{Status: http.StatusUnsupportedMediaType, Detail: "send Content-Type: application/json"}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.Decode(&struct{}{}) != io.EOF {
		err = errors.New("extra data after the JSON object")
	}
	if err == nil {
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tooBig *http.MaxBytesError
	p := &Problem{Status: http.StatusBadRequest, Title: "Malformed request"}
	switch {
	case errors.As(err, &tooBig):
		p.Status, p.Detail = http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is over %d bytes", maxBody)
	case errors.As(err, &syn):
		p.Detail = fmt.Sprintf("invalid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		p.Detail = fmt.Sprintf("field %s: want a %s", typ.Field, typ.Type)
		p.Errors = []FieldError{{Field: typ.Field, Detail: "want a " + typ.Type.String()}}
	case strings.Contains(err.Error(), "parsing time"):
		p.Detail = "requestedExecutionTime: want RFC 3339, e.g. 2026-11-22T16:00:00Z"
		p.Errors = []FieldError{{Field: "requestedExecutionTime", Detail: "want RFC 3339, e.g. 2026-11-22T16:00:00Z"}}
	case errors.Is(err, io.EOF):
		p.Detail = "the body is empty; send a JSON payment"
	default:
		p.Detail = err.Error() // e.g. json: unknown field "amout"
	}
	return p
}
