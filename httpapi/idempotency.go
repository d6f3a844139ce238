package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"net/http"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/idempotency"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
)

// IdempotencyKeys is what the Idempotency-Key handling needs
// (idempotency.Store).
type IdempotencyKeys interface {
	Claim(ctx context.Context, principal, key, method, path string) (*idempotency.Claim, *idempotency.Record, error)
	Complete(ctx context.Context, c *idempotency.Claim, requestHash []byte, r idempotency.Response) error
	Release(ctx context.Context, c *idempotency.Claim) error
}

// maxRecorded bounds the response kept for replay; creating endpoints
// answer with a few hundred bytes.
const maxRecorded = 1 << 20

// idempotent serves r under its Idempotency-Key: the first request with
// the key runs and its answer is recorded (an answer worth retrying, 5xx
// or 413, is not: the key is released); the same key again replays that
// answer if the body is the same (Idempotent-Replayed: true), is 422 if
// it is not, and 409 while the first request is still running.
func (rt *Router) idempotent(w http.ResponseWriter, r *http.Request, key string, limit int64, serve http.Handler) {
	if !validKey(key) {
		WriteProblem(w, r, Problem{Status: http.StatusBadRequest, Type: problemType("invalid-idempotency-key"), Title: "Invalid Idempotency-Key",
			Detail: "Idempotency-Key: 1 to 255 visible ASCII characters, e.g. a UUID", Errors: []field.Error{{Field: "Idempotency-Key", Detail: "1 to 255 visible ASCII characters"}}})
		return
	}
	principal := ""
	if p, ok := auth.FromContext(r.Context()); ok {
		principal = p.TokenID
	}
	claim, rec, err := rt.idem.Claim(r.Context(), principal, key, r.Method, r.URL.Path)
	if err != nil {
		rt.log.Error("idempotency key", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the request could not be taken now; retry with the same Idempotency-Key"})
		return
	}
	if claim == nil {
		rt.replay(w, r, rec, limit)
		return
	}
	body := &hashingReader{r: r.Body, h: sha256.New()}
	r.Body = body
	rw := &recorder{ResponseWriter: w, status: http.StatusOK, keep: true}
	serve.ServeHTTP(rw, r)
	// An answer worth retrying is not kept, and then the rest of the body
	// is not worth reading.
	keep := rw.status < 500 && rw.status != http.StatusRequestEntityTooLarge && !rw.overflow
	if keep {
		// The handler may stop reading early; the hash covers the whole
		// body, read no further than its limit.
		_, err := io.Copy(io.Discard, io.LimitReader(body, limit+1-body.n))
		keep = err == nil && body.n <= limit
	}
	ctx := context.WithoutCancel(r.Context())
	if !keep {
		err = rt.idem.Release(ctx, claim)
	} else {
		err = rt.idem.Complete(ctx, claim, body.h.Sum(nil), idempotency.Response{
			Status: rw.status, ContentType: rw.Header().Get("Content-Type"), Location: rw.Header().Get("Location"), Body: rw.body.Bytes()})
	}
	if err != nil {
		rt.log.Error("idempotency key: record the answer", "error", err)
	}
}

func (rt *Router) replay(w http.ResponseWriter, r *http.Request, rec *idempotency.Record, limit int64) {
	if rec.Method != r.Method || rec.Path != r.URL.Path {
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Type: problemType("idempotency-key-reused"), Title: "Idempotency-Key reused",
			Detail: "this Idempotency-Key was used for " + rec.Method + " " + plaintext.Clip(rec.Path, 64) + "; use a new key for a new request"})
		return
	}
	if rec.Response == nil {
		w.Header().Set("Retry-After", "1")
		WriteProblem(w, r, Problem{Status: http.StatusConflict, Type: problemType("idempotency-key-in-flight"), Title: "Request in progress",
			Detail: "a request with this Idempotency-Key is still being processed; retry in a moment"})
		return
	}
	h := sha256.New()
	if _, err := io.Copy(h, http.MaxBytesReader(w, r.Body, limit)); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			WriteProblem(w, r, *tooLarge(limit, ""))
			return
		}
		WriteProblem(w, r, Problem{Status: http.StatusBadRequest, Title: "Unreadable body", Detail: "the body could not be read to its end"})
		return
	}
	if !bytes.Equal(h.Sum(nil), rec.RequestHash) {
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Type: problemType("idempotency-key-reused"), Title: "Idempotency-Key reused",
			Detail: "this Idempotency-Key was used with a different body; use a new key for a new request"})
		return
	}
	if rec.Response.ContentType != "" {
		w.Header().Set("Content-Type", rec.Response.ContentType)
	}
	if rec.Response.Location != "" {
		w.Header().Set("Location", rec.Response.Location)
	}
	w.Header().Set("Idempotent-Replayed", "true")
	w.WriteHeader(rec.Response.Status)
	_, _ = w.Write(rec.Response.Body)
}

func validKey(k string) bool {
	if k == "" || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// hashingReader hashes what is read through it and counts it.
type hashingReader struct {
	r io.ReadCloser
	h hash.Hash
	n int64
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	return n, err
}

func (h *hashingReader) Close() error { return h.r.Close() }

// recorder passes a response through, noting its status and, with keep,
// a copy of its body.
type recorder struct {
	http.ResponseWriter
	status   int
	wrote    bool
	keep     bool
	body     bytes.Buffer
	overflow bool
}

func (rw *recorder) WriteHeader(status int) {
	if !rw.wrote {
		rw.status, rw.wrote = status, true
	}
	rw.ResponseWriter.WriteHeader(status)
}

func (rw *recorder) Write(b []byte) (int, error) {
	rw.wrote = true
	if !rw.keep {
		return rw.ResponseWriter.Write(b)
	}
	if rw.body.Len()+len(b) <= maxRecorded {
		rw.body.Write(b)
	} else {
		rw.overflow = true
	}
	return rw.ResponseWriter.Write(b)
}
