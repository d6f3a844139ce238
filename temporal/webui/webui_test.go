package webui_test

import (
	"context"
	"io"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/testkit/listeners"
	"github.com/paydispatch/paydispatch/temporal/webui"
)

// TestEveryListenerChecksTheHost: of the listeners Start opens, not one
// answers a request for a foreign name (a DNS name rebound to
// 127.0.0.1) with the UI's pages, its API or its CSRF cookie: each
// refuses it with a 403. The UI's address serves its page, and the
// cookie, to a loopback name. Not parallel: it reads which listeners
// this process opened while Start ran.
func TestEveryListenerChecksTheHost(t *testing.T) {
	before, err := listeners.Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// No frontend answers there: the UI's pages do not need one.
	s, err := webui.Start(context.Background(), webui.Options{Frontend: "127.0.0.1:1", Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	after, err := listeners.Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var opened []netip.AddrPort
	for _, a := range after {
		if !slices.Contains(before, a) {
			opened = append(opened, a)
		}
	}
	if len(opened) == 0 {
		t.Fatalf("no listener opened (%v before, %v after)", before, after)
	}
	for _, a := range opened {
		for _, path := range []string{"/", "/namespaces/default/workflows", "/api/v1/namespaces/default/workflows", "/api/v1/settings"} {
			for _, host := range []string{"evil.example", "evil.example:" + strconv.Itoa(int(a.Port()))} {
				ans := listeners.Probe(a, host, path, 5*time.Second)
				if ans.Status != http.StatusForbidden || len(ans.Header.Values("Set-Cookie")) > 0 {
					t.Errorf("listener %v (of %d opened), GET %s for Host %s: %d %v, want 403 and no cookie:\n%.200s",
						a, len(opened), path, host, ans.Status, ans.Header.Values("Set-Cookie"), ans.Body)
				}
			}
		}
	}

	resp, err := http.Get(s.URL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(strings.ToLower(string(body)), "<html") {
		t.Errorf("GET %s/: %d, want the UI's page:\n%.300s", s.URL(), resp.StatusCode, body)
	}
	if !slices.ContainsFunc(resp.Cookies(), func(c *http.Cookie) bool { return strings.Contains(strings.ToLower(c.Name), "csrf") }) {
		t.Errorf("GET %s/: cookies %v, want the UI's CSRF cookie", s.URL(), resp.Cookies())
	}
}

// TestWorkflowURL: a run's history page, or the workflow's latest run,
// with every part escaped.
func TestWorkflowURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ base, ns, id, run, want string }{
		{"http://127.0.0.1:8233/", "default", "exec-payment-k", "r1", "http://127.0.0.1:8233/namespaces/default/workflows/exec-payment-k/r1/history"},
		{"http://127.0.0.1:8233", "a b", "x/y", "", "http://127.0.0.1:8233/namespaces/a%20b/workflows/x%2Fy"},
	} {
		if got := webui.WorkflowURL(tt.base, tt.ns, tt.id, tt.run); got != tt.want {
			t.Errorf("WorkflowURL(%q, %q, %q, %q) = %q, want %q", tt.base, tt.ns, tt.id, tt.run, got, tt.want)
		}
	}
}
