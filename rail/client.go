package rail

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/outbox"
)

// DefaultTimeout is a rail call's hard timeout when Config gives none.
const DefaultTimeout = 10 * time.Second

// maxAnswerBytes bounds what is read of an answer: a real one is tiny.
const maxAnswerBytes = 64 << 10

// maxMessage bounds the rail's message kept in a Result.
const maxMessage = 300

// Config configures an HTTP rail (JSON or pacs.008).
type Config struct {
	// BaseURL is the rail's root, e.g. http://127.0.0.1:9090 (a path
	// prefix is kept; no query or fragment).
	BaseURL string
	// RailType is the outbox rail type this rail serves; defaults per
	// rail (RailSEPAJSON, RailPacs008).
	RailType string
	// Timeout bounds each call on top of the caller's context; default
	// DefaultTimeout.
	Timeout time.Duration
	// Client makes the calls; default a client on NewTransport(), shared
	// by every rail built without one. A copy of it is used that never
	// follows redirects. Its Timeout field should be zero: the per-call
	// timeout above is the one that classifies.
	Client *http.Client
}

var sharedClient = &http.Client{Transport: NewTransport(), CheckRedirect: noRedirect}

// noRedirect keeps a rail's answers as they are: net/http would follow a
// 303 with a GET and hand back some other resource's answer as the
// rail's.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// NewTransport returns a transport for a rail: plain HTTP/1.1 keep-alive
// with enough idle connections per host that thousands of calls a second
// reuse connections instead of dialling (the default 2 idle per host
// makes nearly every concurrent call dial and leaves sockets in
// TIME_WAIT). Idle connections are dropped after 30 s, before a server's
// usual idle timeout, so the client, not the server, closes them: a
// request written to a connection the server has just closed is a call
// with an unknown outcome.
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: 0,
		DisableCompression:    true,
	}
}

// caller makes the calls every HTTP rail makes and classifies what came
// back.
type caller struct {
	base    string // without a trailing slash
	timeout time.Duration
	client  *http.Client
}

func newCaller(cfg Config) (*caller, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("rail: base URL: %s", transportMessage(err)) // not the URL: it may hold credentials
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("rail: base URL %q: want http(s)://host[:port][/prefix]", u.Redacted())
	}
	c := &caller{base: strings.TrimRight(u.String(), "/"), timeout: cfg.Timeout, client: cfg.Client}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.client == nil {
		c.client = sharedClient
	} else {
		cl := *c.client
		cl.CheckRedirect = noRedirect
		c.client = &cl
	}
	return c, nil
}

// send POSTs body and classifies the answer.
func (c *caller) send(ctx context.Context, path, contentType string, body []byte, m outbox.Message) outbox.Result {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	// A request that got no connection provably never left; one that got
	// a connection may have been written, however it failed.
	ctx, gotConn := traceConn(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return outbox.Result{Outcome: outbox.Retryable, Code: CodeConnectFailed, Message: "building the request: " + err.Error()}
	}
	// net/http replays a request carrying an Idempotency-Key on a reused
	// connection that failed after writing it. Whether to resend a
	// possibly received instruction is the relayer's decision, after an
	// inquiry, so replay is switched off: without GetBody the request is
	// not replayable.
	req.GetBody = nil
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	req.Header.Set(HeaderIdempotencyKey, m.IdempotencyKey)
	req.Header.Set(HeaderParticipantID, m.ParticipantID)
	req.Header.Set(HeaderSequenceID, strconv.FormatInt(m.SequenceID, 10))
	injectTrace(ctx, req)

	resp, err := c.client.Do(req)
	if err != nil {
		return failure(ctx, err, gotConn.Load())
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		// The rail was answering: it had the whole request.
		return failure(ctx, err, true)
	}
	return sendResult(resp.StatusCode, raw)
}

// injectTrace puts the span ctx holds (the relayer's outbox.send or
// outbox.inquire, when tracing is on) in req's W3C traceparent header,
// so the rail's own spans join the payment's trace. Without a span it
// sets nothing.
func injectTrace(ctx context.Context, req *http.Request) {
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
}

// traceConn records whether the request got a connection.
func traceConn(ctx context.Context) (context.Context, *atomic.Bool) {
	var got atomic.Bool
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { got.Store(true) },
	}), &got
}

// sendResult classifies a send's answer.
func sendResult(status int, raw []byte) outbox.Result {
	var a Answer
	parsed := json.Unmarshal(raw, &a) == nil
	if status >= 200 && status < 300 {
		switch {
		case parsed && a.Status == StatusAccepted && (status == http.StatusOK || status == http.StatusCreated):
			return outbox.Result{Outcome: outbox.Delivered, Reference: a.Reference}
		case !parsed || a.Code == "":
			// A success status the API does not define, or a body that
			// does not say: the rail may well have taken it.
			return outbox.Result{Outcome: outbox.Unknown, Code: CodeBadAnswer, Message: fmt.Sprintf("HTTP %d with an answer that is not {\"status\":\"ACCEPTED\"}", status)}
		}
	}
	if !parsed {
		a = Answer{} // an error page: classify by status
	}
	outcome, code := ClassifyAnswer(status, a.Code)
	return outbox.Result{Outcome: outcome, Code: code, Message: plaintext.Clip(a.Message, maxMessage)}
}

// inquire asks the rail what it holds under m's idempotency key.
func (c *caller) inquire(ctx context.Context, m outbox.Message) outbox.Result {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	ctx, gotConn := traceConn(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+PathInstructions+"/"+url.PathEscape(m.IdempotencyKey), nil)
	if err != nil {
		return outbox.Result{Outcome: outbox.Unknown, Code: CodeConnectFailed, Message: "building the request: " + err.Error()}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set(HeaderParticipantID, m.ParticipantID)
	injectTrace(ctx, req)
	resp, err := c.client.Do(req)
	if err != nil {
		r := failure(ctx, err, gotConn.Load())
		return outbox.Result{Outcome: outbox.Unknown, Code: r.Code, Message: r.Message}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		r := failure(ctx, err, true)
		return outbox.Result{Outcome: outbox.Unknown, Code: r.Code, Message: r.Message}
	}
	return inquiryResult(resp.StatusCode, raw)
}

// inquiryResult classifies an inquiry's answer. Only the two documented
// answers settle anything; everything else leaves the outcome unknown.
func inquiryResult(status int, raw []byte) outbox.Result {
	if status == http.StatusNotFound {
		return outbox.Result{Outcome: outbox.NotReceived}
	}
	var a Answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return outbox.Result{Outcome: outbox.Unknown, Code: HTTPCode(status), Message: "inquiry answer is not JSON"}
	}
	if status == http.StatusOK {
		switch a.Status {
		case StatusAccepted:
			return outbox.Result{Outcome: outbox.Delivered, Reference: a.Reference}
		case StatusRejected:
			// The rail holds a refusal: whatever its code, this key is done.
			return outbox.Result{Outcome: outbox.Terminal, Code: a.Code, Message: plaintext.Clip(a.Message, maxMessage)}
		}
		return outbox.Result{Outcome: outbox.Unknown, Code: CodeBadAnswer, Message: fmt.Sprintf("inquiry status %q", plaintext.Clip(a.Status, 32))}
	}
	code := a.Code
	if code == "" {
		code = HTTPCode(status)
	}
	return outbox.Result{Outcome: outbox.Unknown, Code: code, Message: plaintext.Clip(a.Message, maxMessage)}
}

// failure classifies a call that got no whole answer. mayHaveLeft is
// false only when no connection was obtained: then nothing was written
// and the call is Retryable; otherwise the rail may have the instruction
// and the outcome is Unknown.
func failure(ctx context.Context, err error, mayHaveLeft bool) outbox.Result {
	msg := plaintext.Clip(transportMessage(err), maxMessage)
	if !mayHaveLeft {
		return outbox.Result{Outcome: outbox.Retryable, Code: CodeConnectFailed, Message: msg}
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return outbox.Result{Outcome: outbox.Unknown, Code: CodeTimeout, Message: msg}
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		return outbox.Result{Outcome: outbox.Unknown, Code: CodeCanceled, Message: msg}
	}
	return outbox.Result{Outcome: outbox.Unknown, Code: CodeConnectionCut, Message: msg}
}

// transportMessage drops url.Error's method and URL (the inquiry's URL
// holds the idempotency key, the base URL may hold credentials): the
// cause is what a log needs.
func transportMessage(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
