// Package webui serves Temporal's Web UI (github.com/temporalio/ui-server,
// the UI Temporal's CLI serves beside its development server) for a
// Temporal frontend, on loopback, and gives the URL of a workflow's page
// in it.
//
// The UI runs in process as a handler, on the one listener this package
// binds (so a taken port is an error returned, where the UI server's own
// Start would end the process), and that listener answers only requests
// whose Host is a loopback name, so a web page the operator visits
// cannot reach the UI through a DNS name rebound to 127.0.0.1. The UI
// server's Start is never called: it would open a second listener of
// its own, which checks no Host.
package webui

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/temporalio/ui-server/v2/server/api"
	"github.com/temporalio/ui-server/v2/server/auth"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	"github.com/temporalio/ui-server/v2/server/cors"
	"github.com/temporalio/ui-server/v2/server/csrf"
	"github.com/temporalio/ui-server/v2/server/headers"
	"github.com/temporalio/ui-server/v2/server/route"
	uiassets "github.com/temporalio/ui-server/v2/ui"

	"github.com/paydispatch/paydispatch/internal/loopback"
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
	url    string
	server *http.Server
	served chan struct{}
}

// Start serves the UI and waits until it answers.
func Start(ctx context.Context, o Options) (_ *Server, err error) {
	if o.Frontend == "" {
		return nil, errors.New("temporal web UI: no frontend address")
	}
	ui, err := newUI(o)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(o.Port)))
	if err != nil && o.OrAnyPort && o.Port != 0 {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		return nil, fmt.Errorf("temporal web UI: %w (set --temporal-ui-port or PAYDISPATCH_TEMPORAL_UI_PORT to a free port, or off)", err)
	}
	s := &Server{
		url:    "http://" + ln.Addr().String(),
		served: make(chan struct{}),
		server: &http.Server{Handler: loopback.Only(ui), ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10},
	}
	go func() {
		defer close(s.served)
		_ = s.server.Serve(ln) // returns when stopped
	}()
	if err := waitHealthy(ctx, s.url+"/healthz"); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// newUI builds the UI server's handler as ui-server's NewServer does
// (v2.55.0: the same middleware, in the same order, and the same
// routes), without the listener its Start would open.
func newUI(o Options) (_ http.Handler, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("temporal web UI: %v", r)
		}
	}()
	cfg := &uiconfig.Config{
		TemporalGRPCAddress: o.Frontend,
		DefaultNamespace:    o.Namespace,
		EnableUI:            true,
		// Plain HTTP on loopback: the CSRF cookie must not ask for TLS.
		CORS:     uiconfig.CORS{CookieInsecure: true},
		HideLogs: true,
		// Nothing fetched from the Internet.
		DisableNewsFetch: true,
	}
	provider, err := uiconfig.NewConfigProviderWithRefresh(cfg)
	if err != nil {
		return nil, fmt.Errorf("temporal web UI: %w", err)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(middleware.Recover())
	e.Use(middleware.Gzip())
	e.Use(cors.CORSMiddleware(cors.CORSConfig{
		AllowHeaders: []string{echo.HeaderOrigin, echo.HeaderContentType, echo.HeaderAccept,
			echo.HeaderXCSRFToken, echo.HeaderAuthorization, auth.AuthorizationExtrasHeader, "Caller-Type"},
		AllowCredentials: true,
		ConfigProvider:   provider,
	}))
	e.Use(middleware.Secure())
	e.Use(csrf.EnsureTokenCookie(false))
	e.Use(middleware.CSRFWithConfig(csrf.MiddlewareConfig(provider, false)))
	e.Pre(route.PublicPath(cfg.PublicPath))
	route.SetHealthRoute(e)
	forward := []api.Middleware{headers.WithForwardHeaders([]string{auth.AuthorizationExtrasHeader, "Caller-Type"})}
	if err := route.SetAPIRoutes(e, provider, forward); err != nil {
		return nil, fmt.Errorf("temporal web UI: %w", err)
	}
	route.SetAuthRoutes(e, provider)
	assets, err := uiassets.Assets()
	if err == nil {
		assets, err = fs.Sub(assets, "local")
	}
	if err != nil {
		return nil, fmt.Errorf("temporal web UI: its pages: %w", err)
	}
	if err := route.SetUIRoutes(e, cfg.PublicPath, assets, provider); err != nil {
		return nil, fmt.Errorf("temporal web UI: its pages: %w", err)
	}
	route.SetRenderRoute(e, "/")
	return e, nil
}

// URL is the UI's base URL, e.g. http://127.0.0.1:8233.
func (s *Server) URL() string { return s.url }

// Stop stops the UI.
func (s *Server) Stop() {
	_ = s.server.Close()
	<-s.served
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
