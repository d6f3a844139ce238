package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/paydispatch/paydispatch/internal/field"
)

// Problem is an RFC 9457 problem details object.
type Problem struct {
	Type     string `json:"type,omitempty"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	// Errors lists field-level problems (which field, and what is wrong).
	Errors []field.Error `json:"errors,omitempty"`
}

// invalidFields are the fields a refusal of input names, nil when err is
// not one. Every check of input, whichever package runs it, returns a
// *field.Invalid: this is the one place the API reads it.
func invalidFields(err error) []field.Error {
	var bad *field.Invalid
	if !errors.As(err, &bad) {
		return nil
	}
	if bad.Fields == nil {
		return []field.Error{}
	}
	return bad.Fields
}

// WriteProblem writes p as application/problem+json.
func WriteProblem(w http.ResponseWriter, r *http.Request, p Problem) {
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	if p.Type == "" {
		p.Type = problemType(kindOf(p.Status))
	}
	if p.Instance == "" && r != nil {
		p.Instance = r.URL.Path
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// WriteJSON writes v as application/json with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// kindOf is the problem kind of a status, for problems that name no
// kind of their own: a client can switch on the type URI.
func kindOf(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "malformed-request"
	case http.StatusUnauthorized:
		return "unauthenticated"
	case http.StatusForbidden:
		return "insufficient-scope"
	case http.StatusNotFound:
		return "not-found"
	case http.StatusMethodNotAllowed:
		return "method-not-allowed"
	case http.StatusConflict:
		return "conflict"
	case http.StatusRequestEntityTooLarge:
		return "too-large"
	case http.StatusUnsupportedMediaType:
		return "unsupported-media-type"
	case http.StatusUnprocessableEntity:
		return "invalid-request"
	case http.StatusTooManyRequests:
		return "rate-limited"
	case http.StatusServiceUnavailable:
		return "unavailable"
	}
	if status >= 500 {
		return "server-error"
	}
	return "client-error"
}
