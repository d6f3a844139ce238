// Package webui serves Temporal's Web UI (github.com/temporalio/ui-server,
// the UI Temporal's CLI serves beside its development server) for a
// Temporal frontend, on loopback, and gives the URL of a workflow's page
// in it.
//
// The UI server is put behind a small proxy of this package's: the
// proxy binds the port (so a taken port is an error returned, where the
// UI server would end the process), and it answers only requests whose
// Host is a loopback name, so a web page the operator visits cannot
// reach the UI through a DNS name rebound to 127.0.0.1.
package webui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
)

// Options configure the UI.
type Options struct {
	// Frontend is the Temporal frontend's gRPC host:port.
	Frontend string
	// Namespace is the namespace the UI opens on.
	Namespace string
	// Port on 127.0.0.1 (0: any free port).
	Port int
	// OrAnyPort serves on any free port when Port is taken, instead of
	// failing.
	OrAnyPort bool
}

// Server is a running UI.
type Server struct {
	url   string
	proxy *http.Server
	ui    *uiserver.Server
}

// Start serves the UI and waits until it answers.
func Start(ctx context.Context, o Options) (_ *Server, err error) {
	if o.Frontend == "" {
		return nil, errors.New("temporal web UI: no frontend address")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(o.Port)))
	if err != nil && o.OrAnyPort && o.Port != 0 {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		return nil, fmt.Errorf("temporal web UI: %w (set --temporal-ui-port or PAYDISPATCH_TEMPORAL_UI_PORT to a free port, or off)", err)
	}
	defer func() {
		if err != nil {
			ln.Close()
		}
	}()
	// The UI server binds its own address, and ends the process when it
	// cannot: it gets a free port on loopback, behind the proxy.
	inner, err := freePort()
	if err != nil {
		return nil, err
	}
	ui, err := newUI(o, inner)
	if err != nil {
		return nil, err
	}
	go func() { _ = ui.Start() }() // returns when stopped
	target := &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(inner))}
	if err := waitHealthy(ctx, target.String()+"/healthz"); err != nil {
		ui.Stop()
		return nil, err
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host // the UI's cookies and redirects are for the address the browser used
		},
		FlushInterval: -1,
	}
	s := &Server{
		url: "http://" + ln.Addr().String(),
		ui:  ui,
		proxy: &http.Server{Handler: loopbackOnly(proxy), ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10},
	}
	go func() { _ = s.proxy.Serve(ln) }()
	return s, nil
}

// newUI builds the UI server, whose constructor panics on a bad
// configuration.
func newUI(o Options, port int) (ui *uiserver.Server, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("temporal web UI: %v", r)
		}
	}()
	return uiserver.NewServer(uioptions.WithConfigProvider(&uiconfig.Config{
		Host:                "127.0.0.1",
		Port:                port,
		TemporalGRPCAddress: o.Frontend,
		DefaultNamespace:    o.Namespace,
		EnableUI:            true,
		// Plain HTTP on loopback: the CSRF cookie must not ask for TLS.
		CORS:     uiconfig.CORS{CookieInsecure: true},
		HideLogs: true,
		// Nothing fetched from the Internet.
		DisableNewsFetch: true,
	})), nil
}

// URL is the UI's base URL, e.g. http://127.0.0.1:8233.
func (s *Server) URL() string { return s.url }

// Stop stops the UI.
func (s *Server) Stop() {
	_ = s.proxy.Close()
	s.ui.Stop()
}

// WorkflowURL is the page of a workflow's run (its history) in the UI at
// base; with no run, of its latest run.
func WorkflowURL(base, namespace, workflowID, runID string) string {
	u := strings.TrimRight(base, "/") + "/namespaces/" + url.PathEscape(namespace) + "/workflows/" + url.PathEscape(workflowID)
	if runID != "" {
		u += "/" + url.PathEscape(runID) + "/history"
	}
	return u
}

// loopbackOnly answers 403 to a request whose Host is not a loopback name.
func loopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hp, _, err := net.SplitHostPort(host); err == nil {
			host = hp
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		ip := net.ParseIP(host)
		if !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
			http.Error(w, "Temporal's Web UI answers on a loopback address only (127.0.0.1, localhost)", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("temporal web UI: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitHealthy(ctx context.Context, health string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, health, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %s", health, resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("temporal web UI: not ready: %v", last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
