package temporal

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"

	"github.com/paydispatch/paydispatch/temporal/devserver"
	"github.com/paydispatch/paydispatch/temporal/webui"
)

// Options say which Temporal to use.
type Options struct {
	// Address of a Temporal frontend (host:port). Empty embeds a server.
	Address   string
	Namespace string // default "default"
	// TLS for Address: a client certificate and key (mutual TLS), a CA
	// bundle to verify the server, and the server name to expect.
	TLSCertFile, TLSKeyFile, TLSCAFile, TLSServerName string

	// DataDir holds the embedded server's files (DataDir/temporal): its
	// SQLite store, or the ports and partitions of its PostgreSQL store.
	DataDir string
	// EmbeddedStore is where the embedded server keeps its data: StoreAuto
	// (the default), StorePostgres or StoreSQLite.
	EmbeddedStore Store
	// EmbeddedPostgresURL is a connection string to a PostgreSQL server the
	// embedded Temporal may create its two databases on (the private
	// cluster's, or DATABASE_URL's); needed by StorePostgres.
	EmbeddedPostgresURL string
	// EmbeddedPort is the embedded frontend's port (0: a free one).
	EmbeddedPort int
	// EmbeddedLogLevel is the embedded server's own log level.
	EmbeddedLogLevel string
	// Ephemeral keeps the embedded server in memory (tests).
	Ephemeral bool
	// EmbeddedAllVisibilityIndexes keeps every visibility index of
	// Temporal's SQLite schema (benchmarks compare; see devserver.Options).
	EmbeddedAllVisibilityIndexes bool
	// EmbeddedTaskQueuePartitions: see devserver.Options (0: 1).
	EmbeddedTaskQueuePartitions int
	// EmbeddedRetention: see devserver.Options.Retention (0: as it is).
	EmbeddedRetention time.Duration
	// EmbeddedUI serves Temporal's Web UI for the embedded server, on
	// loopback (package webui); nil: no UI.
	EmbeddedUI *UIOptions

	Logger *slog.Logger
	// HeldWorkflowTypes hold their first workflow task on purpose (a paced
	// execution waiting for its slot): the SDK's warning that a task took
	// over 5 s is not logged for them (see heldTaskFilter).
	HeldWorkflowTypes []string
	// TracerProvider, when set, traces the client and its workers with
	// the SDK's OpenTelemetry interceptor (TracingInterceptor); nil
	// (tracing off): no interceptor, so no span and no header on any
	// start or task.
	TracerProvider trace.TracerProvider
}

// Conn is a connected client, and the embedded server behind it if any.
type Conn struct {
	Client client.Client
	Server *devserver.Server // nil on TEMPORAL_ADDRESS
	// Address is where the client connected.
	Address   string
	Namespace string
	// Store names the embedded server's store ("" on TEMPORAL_ADDRESS).
	Store string
	// UIURL is the base URL of the embedded server's Web UI ("" without
	// one), e.g. http://127.0.0.1:8233.
	UIURL string
	// TracerProvider is Options.TracerProvider: nil when tracing is off.
	// The workers' own spans (a payment's execution) come from it.
	TracerProvider trace.TracerProvider

	ui *webui.Server
}

// UIOptions place the embedded server's Web UI on 127.0.0.1.
type UIOptions struct {
	// Port, or 0 for any free one.
	Port int
	// OrAnyPort takes any free port when Port is taken.
	OrAnyPort bool
}

// Connect dials Temporal, embedding a server first when no address is set.
func Connect(ctx context.Context, o Options) (*Conn, error) {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	conn := &Conn{Address: o.Address, Namespace: o.Namespace, TracerProvider: o.TracerProvider}
	sdkLog := o.Logger
	if len(o.HeldWorkflowTypes) > 0 {
		sdkLog = slog.New(heldTaskFilter{Handler: o.Logger.Handler(), types: o.HeldWorkflowTypes})
	}
	copts := client.Options{Namespace: o.Namespace, Logger: sdklog.NewStructuredLogger(sdkLog.With("component", "temporal-client"))}
	if o.Address == "" {
		dopts := devserver.Options{
			Port: o.EmbeddedPort, Namespaces: []string{o.Namespace}, LogLevel: o.EmbeddedLogLevel,
			AllVisibilityIndexes: o.EmbeddedAllVisibilityIndexes,
			TaskQueuePartitions:  o.EmbeddedTaskQueuePartitions,
			Retention:            o.EmbeddedRetention,
		}
		store := "memory"
		if !o.Ephemeral {
			var err error
			if store, err = chooseStore(o, &dopts); err != nil {
				return nil, err
			}
		}
		srv, err := devserver.Start(ctx, dopts)
		if err != nil {
			return nil, err
		}
		conn.Server, conn.Address, conn.Store = srv, srv.HostPort(), store
		// Over loopback, compressing every call only costs CPU (the SDK
		// gzips by default; the server answers in kind): ~3 % of the
		// process during a paced drain.
		copts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
		o.Logger.Info("embedded Temporal started", "address", srv.HostPort(), "namespace", o.Namespace, "store", store)
		if o.EmbeddedUI != nil {
			ui, err := webui.Start(ctx, webui.Options{Frontend: srv.HostPort(), Namespace: o.Namespace,
				Port: o.EmbeddedUI.Port, OrAnyPort: o.EmbeddedUI.OrAnyPort})
			if err != nil {
				conn.stopServer()
				return nil, err
			}
			conn.ui, conn.UIURL = ui, ui.URL()
			o.Logger.Info("Temporal's Web UI on "+ui.URL(), "url", ui.URL())
		}
	} else {
		tlsCfg, err := tlsConfig(o)
		if err != nil {
			return nil, err
		}
		copts.ConnectionOptions.TLS = tlsCfg
	}
	copts.HostPort = conn.Address
	if o.TracerProvider != nil {
		ti, err := TracingInterceptor(o.TracerProvider)
		if err != nil {
			conn.stopServer()
			return nil, err
		}
		copts.Interceptors = append(copts.Interceptors, ti)
	}
	c, err := client.DialContext(ctx, copts)
	if err != nil {
		conn.stopServer()
		return nil, fmt.Errorf("temporal: connect to %s: %w", conn.Address, err)
	}
	conn.Client = c
	return conn, nil
}

// Close closes the client and stops the embedded server, if any.
func (c *Conn) Close() {
	if c.Client != nil {
		c.Client.Close()
	}
	c.stopServer()
}

func (c *Conn) stopServer() {
	if c.ui != nil {
		c.ui.Stop()
	}
	if c.Server != nil {
		_ = c.Server.Stop()
	}
}

func tlsConfig(o Options) (*tls.Config, error) {
	if o.TLSCertFile == "" && o.TLSKeyFile == "" && o.TLSCAFile == "" && o.TLSServerName == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.TLSServerName}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		return nil, errors.New("temporal: TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together: set both or neither")
	}
	if o.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCertFile, o.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("temporal: load TLS client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if o.TLSCAFile != "" {
		pem, err := os.ReadFile(o.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("temporal: read TEMPORAL_TLS_CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("temporal: TEMPORAL_TLS_CA %s holds no PEM certificate", o.TLSCAFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// MinRetention is the shortest EmbeddedRetention.
const MinRetention = devserver.MinRetention

// RetentionJitter is how long after its retention a closed workflow may
// be deleted: the embedded server spreads deletions over it.
func RetentionJitter(retention time.Duration) time.Duration {
	return devserver.RetentionJitter(retention)
}

// TracingInterceptor is the SDK's OpenTelemetry interceptor on tp, for a
// client's options (its workers take it too): a workflow started from a
// context with a span runs in that span's trace, and so do its
// activities. Spans: StartWorkflow:<type> (the client's),
// RunWorkflow:<type>, StartActivity:<type> and RunActivity:<type>, each
// the child of the one before; the context travels in the workflow's
// and activities' headers as a W3C traceparent.
func TracingInterceptor(tp trace.TracerProvider) (interceptor.Interceptor, error) {
	return temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer:            tp.Tracer("go.temporal.io/sdk"),
		TextMapPropagator: propagation.TraceContext{},
		DisableBaggage:    true,
	})
}
