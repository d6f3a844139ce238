package screening

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// The client's defaults.
const (
	DefaultBatchSize   = 500
	DefaultTimeout     = 2 * time.Second
	DefaultMaxInFlight = 4
	// MaxBatchSize bounds a call: an intake chunk is at most 2,500
	// payments.
	MaxBatchSize = 5000
)

// ClientConfig is what a Client calls the service with.
type ClientConfig struct {
	// URL is the service's endpoint, http or https: each call POSTs a
	// batch to it.
	URL string
	// BatchSize is how many payments a call carries at most (default
	// DefaultBatchSize).
	BatchSize int
	// Timeout bounds a call, from its send to the end of the answer
	// (default DefaultTimeout); one cut off is an ERROR for its payments.
	Timeout time.Duration
	// MaxInFlight bounds the calls in flight from this Client, over all
	// the Phase A activities sharing it (default DefaultMaxInFlight).
	MaxInFlight int
	// HTTPClient makes the calls (default: http.DefaultTransport's,
	// without a timeout of its own: Timeout bounds each call).
	HTTPClient *http.Client
	// Metrics counts the calls and their outcomes (nil: nothing).
	Metrics *Metrics
}

// Client screens payments through the service, in batches.
type Client struct {
	cfg   ClientConfig
	slots chan struct{}
}

// NewClient returns a Client for cfg, or an error naming the field that
// is out of range.
func NewClient(cfg ClientConfig) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("screening: URL %q: want an http or https URL", cfg.URL)
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.BatchSize < 1 || cfg.BatchSize > MaxBatchSize {
		return nil, fmt.Errorf("screening: BatchSize %d: want 1 to %d", cfg.BatchSize, MaxBatchSize)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("screening: Timeout %s: want a positive duration", cfg.Timeout)
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.MaxInFlight < 1 {
		return nil, fmt.Errorf("screening: MaxInFlight %d: want at least 1", cfg.MaxInFlight)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	return &Client{cfg: cfg, slots: make(chan struct{}, cfg.MaxInFlight)}, nil
}

// Screen asks the service about subjects, in batches of at most
// BatchSize, at most MaxInFlight calls at once, and answers a Result per
// subject, in order. A call that fails, times out or is answered with
// something refused is an ERROR for its payments; the error is ctx's
// alone, when it ended first (the answers are then incomplete).
func (c *Client) Screen(ctx context.Context, subjects []Subject) ([]Result, error) {
	out := make([]Result, len(subjects))
	var wg sync.WaitGroup
	for lo := 0; lo < len(subjects); lo += c.cfg.BatchSize {
		hi := min(lo+c.cfg.BatchSize, len(subjects))
		select {
		case c.slots <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return nil, ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-c.slots }()
			copy(out[lo:hi], c.call(ctx, subjects[lo:hi]))
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// maxAnswer bounds an answer's body: room for a verdict, a list and a
// reason per payment, and some.
func maxAnswer(n int) int64 { return 64<<10 + int64(n)*1<<10 }

// call makes one call about a batch.
func (c *Client) call(ctx context.Context, batch []Subject) []Result {
	ids := make([]string, len(batch))
	for i, s := range batch {
		ids[i] = s.ID
	}
	start := time.Now()
	res, outcome := c.post(ctx, batch, ids)
	c.cfg.Metrics.call(outcome, time.Since(start), res)
	return res
}

// The outcomes of a call, as the metrics count them.
const (
	outcomeOK        = "ok"
	outcomeTimeout   = "timeout"
	outcomeTransport = "transport"
	outcomeStatus    = "status"
	outcomeRefused   = "refused"
)

func (c *Client) post(ctx context.Context, batch []Subject, ids []string) ([]Result, string) {
	fail := func(outcome, reason string) ([]Result, string) {
		out := make([]Result, len(ids))
		for i := range out {
			out[i] = Result{Verdict: Error, Reason: reason}
		}
		return out, outcome
	}
	body, err := json.Marshal(request{Payments: batch})
	if err != nil {
		return fail(outcomeTransport, "request: "+err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return fail(outcomeTransport, "request: "+err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.cfg.HTTPClient.Do(req)
	if err == nil {
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			return fail(outcomeStatus, fmt.Sprintf("HTTP %d", resp.StatusCode))
		}
		limit := maxAnswer(len(ids))
		body, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
		if err == nil && int64(len(body)) > limit {
			return fail(outcomeRefused, fmt.Sprintf("answer longer than %d bytes", limit))
		}
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fail(outcomeTimeout, "timeout after "+c.cfg.Timeout.String())
		}
		return fail(outcomeTransport, clean(err.Error()))
	}
	res, err := decodeAnswer(body, ids)
	if err != nil {
		return res, outcomeRefused
	}
	return res, outcomeOK
}
