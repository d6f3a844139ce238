package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// api is an HTTP client of paydispatch's API with one bearer token.
type api struct {
	base  string
	token string
	http  *http.Client
}

// call sends body (JSON unless contentType says otherwise) and decodes a
// 2xx answer into out; any other answer is an error quoting its problem.
func (a api) call(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	var lastErr error
	for attempt := range 5 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * 500 * time.Millisecond):
			}
		}
		req, err := http.NewRequestWithContext(ctx, method, a.base+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		if contentType == "" {
			contentType = "application/json"
		}
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Authorization", "Bearer "+a.token)
		resp, err := a.http.Do(req)
		if err != nil {
			lastErr = err
			continue
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			lastErr = err
			continue
		}
		switch {
		case resp.StatusCode/100 == 2:
			if out == nil {
				return nil
			}
			return json.Unmarshal(data, out)
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			// Safe to resend: every write the demo makes is idempotent by
			// its id.
			lastErr = fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
			continue
		default:
			return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
		}
	}
	return lastErr
}

func (a api) postJSON(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return a.call(ctx, http.MethodPost, path, "", body, out)
}
