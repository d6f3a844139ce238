package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/temporal/webui"
)

// TestTemporalWebUI: 'paydispatch temporal' serves Temporal's Web UI on
// loopback and logs its address; the UI answers its root and a workflow
// run's page with the UI's HTML, reaches the embedded frontend, and
// refuses a request for another host name.
func TestTemporalWebUI(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncWriter{w: &bytes.Buffer{}}
	done := make(chan int, 1)
	go func() {
		env := &environment{stdout: io.Discard, stderr: stderr, getenv: func(string) string { return "" }}
		done <- run(ctx, env, []string{"temporal", "--data-dir", t.TempDir(), "--temporal-port", "0",
			"--temporal-log-level", "fatal", "--log-format", "json"})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("temporal did not stop")
		}
	})

	logs := func() []byte {
		stderr.mu.Lock()
		defer stderr.mu.Unlock()
		return bytes.Clone(stderr.w.Bytes())
	}
	var ui string
	for deadline := time.Now().Add(2 * time.Minute); ui == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		sc := bufio.NewScanner(bytes.NewReader(logs()))
		for sc.Scan() {
			var line struct {
				WebUI string `json:"web_ui"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.WebUI != "" {
				ui = line.WebUI
			}
		}
		select {
		case code := <-done:
			t.Fatalf("temporal exited %d:\n%s", code, logs())
		default:
		}
	}
	if !strings.HasPrefix(ui, "http://127.0.0.1:") {
		t.Fatalf("no Web UI address logged (web_ui %q):\n%s", ui, logs())
	}

	get := func(url, host string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
	}
	for _, page := range []string{ui + "/", webui.WorkflowURL(ui, "default", "exec-payment-k", "00000000-0000-0000-0000-000000000001")} {
		code, ct, body := get(page, "")
		if code != http.StatusOK || !strings.HasPrefix(ct, "text/html") || !strings.Contains(strings.ToLower(body), "<html") {
			t.Errorf("GET %s: %d %q, want 200 with the UI's HTML:\n%.300s", page, code, ct, body)
		}
	}
	// The UI's API answers from the embedded frontend.
	if code, _, body := get(ui+"/api/v1/namespaces/default", ""); code != http.StatusOK || !strings.Contains(body, `"default"`) {
		t.Errorf("GET the namespace through the UI: %d:\n%.300s", code, body)
	}
	if code, _, _ := get(ui+"/", "ui.attacker.example"); code != http.StatusForbidden {
		t.Errorf("a request for another host name: %d, want 403", code)
	}
}
