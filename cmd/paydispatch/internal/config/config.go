// Package config reads paydispatch's settings from flags and environment
// variables; a flag given on the command line wins over its variable. Bad
// values are reported in one line naming the flag or variable and the fix.
package config

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Setting is one configurable value: a flag, its environment variable, its
// default and how to check it.
type Setting struct {
	Flag    string
	Env     string
	Default string
	Usage   string
	// Parse checks and stores the value; its error says what is expected.
	Parse func(string) error
	// Bool makes the flag a switch: --name alone means --name=true.
	Bool bool

	raw string
}

// rawValue is a setting's text; as a boolean flag it may stand alone.
type rawValue struct {
	dst    *string
	isBool bool
}

func (v rawValue) String() string {
	if v.dst == nil {
		return ""
	}
	return *v.dst
}
func (v rawValue) Set(x string) error { *v.dst = x; return nil }
func (v rawValue) IsBoolFlag() bool   { return v.isBool }

// Set is the settings of one subcommand, bound to its flag set.
type Set struct {
	fs       *flag.FlagSet
	settings []*Setting
	getenv   func(string) string
}

// NewSet binds settings to fs; their defaults come from getenv when set.
func NewSet(fs *flag.FlagSet, getenv func(string) string, settings ...*Setting) *Set {
	s := &Set{fs: fs, settings: settings, getenv: getenv}
	for _, st := range settings {
		def := st.Default
		if v := getenv(st.Env); v != "" && st.Env != "" {
			def = v
		}
		usage := st.Usage
		if st.Env != "" {
			usage += " (env " + st.Env + ")"
		}
		if st.Bool {
			st.raw = def
			fs.Var(rawValue{dst: &st.raw, isBool: true}, st.Flag, usage)
			continue
		}
		fs.StringVar(&st.raw, st.Flag, def, usage)
	}
	return s
}

// Parse parses args and then every setting's value, failing on the first bad
// one with a message that names where the value came from.
func (s *Set) Parse(args []string) error {
	if err := s.fs.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	s.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, st := range s.settings {
		if err := st.Parse(st.raw); err != nil {
			source := "--" + st.Flag
			if !given[st.Flag] && st.Env != "" && s.getenv(st.Env) != "" {
				source = st.Env
			}
			return fmt.Errorf("invalid %s %q: %v", source, st.raw, err)
		}
	}
	return nil
}

// ParseWords parses flags given anywhere among a command's words (the flag
// package stops at the first word that is not a flag) and returns the
// words in order.
func (s *Set) ParseWords(args []string) ([]string, error) {
	var words []string
	for {
		if err := s.Parse(args); err != nil {
			return nil, err
		}
		rest := s.fs.Args()
		if len(rest) == 0 {
			return words, nil
		}
		words, args = append(words, rest[0]), rest[1:]
	}
}

// Database is where the data lives.
type Database struct {
	URL      string
	DataDir  string
	PGBinDir string
	MaxConns int32
}

// DatabaseSettings binds d's settings.
func DatabaseSettings(d *Database) []*Setting {
	return []*Setting{
		{Flag: "database-url", Env: "DATABASE_URL", Usage: "PostgreSQL connection string; empty runs a private PostgreSQL in the data directory",
			Parse: func(v string) error {
				if v != "" && !strings.HasPrefix(v, "postgres://") && !strings.HasPrefix(v, "postgresql://") && !strings.Contains(v, "=") {
					return fmt.Errorf("want a postgres:// URL or key=value pairs")
				}
				d.URL = v
				return nil
			}},
		{Flag: "data-dir", Env: "PAYDISPATCH_DATA_DIR", Default: ".paydispatch", Usage: "directory for the private PostgreSQL's data (and, with serve, the embedded Temporal's)",
			Parse: func(v string) error {
				if v == "" {
					return fmt.Errorf("want a directory path")
				}
				d.DataDir = v
				return nil
			}},
		{Flag: "pg-bin-dir", Env: "PAYDISPATCH_PG_BIN_DIR", Usage: "directory of the PostgreSQL server binaries (default: found on PATH, pg_config, /usr/lib/postgresql/*/bin)",
			Parse: func(v string) error { d.PGBinDir = v; return nil }},
		{Flag: "db-max-conns", Env: "PAYDISPATCH_DB_MAX_CONNS", Default: "20", Usage: "maximum PostgreSQL connections in the pool",
			Parse: func(v string) error {
				n, err := intIn(v, 1, 1000)
				d.MaxConns = int32(n)
				return err
			}},
	}
}

// Server is the HTTP side of serve.
type Server struct {
	HTTPAddr        string
	ShutdownTimeout time.Duration
	MigrateOnStart  bool
	BulkChunkSize   int
	PprofAddr       string
	// InsecureDev serves the API to anyone, without tokens.
	InsecureDev bool
	// IdempotencyTTL is how long an Idempotency-Key is remembered.
	IdempotencyTTL time.Duration
	// TokenRate is each token's requests a second (0: unlimited); bursts
	// of twice as many pass.
	TokenRate int
	// AuthFailureLimit is each client address's failed authentications
	// a minute, in bursts of as many (0: unlimited).
	AuthFailureLimit int
	// MaxBody and MaxBulkBody bound request bodies, in bytes.
	MaxBody, MaxBulkBody int
	// MetricsTenantLabels exports the executions by tenant, under the
	// tenants' names, at /metrics (which needs no token).
	MetricsTenantLabels bool
	// DuplicateFileDays is how many days a tenant's accepted bulk file is
	// remembered, to refuse the same payments sent again (0: never).
	DuplicateFileDays int
}

// ServerSettings binds s's settings.
func ServerSettings(s *Server) []*Setting {
	return []*Setting{
		{Flag: "http-addr", Env: "PAYDISPATCH_HTTP_ADDR", Default: "127.0.0.1:8080", Usage: "HTTP listen address (host:port)",
			Parse: func(v string) error {
				if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
					return fmt.Errorf("want host:port, e.g. 127.0.0.1:8080")
				}
				s.HTTPAddr = v
				return nil
			}},
		ShutdownSetting(&s.ShutdownTimeout),
		{Flag: "pprof-addr", Env: "PAYDISPATCH_PPROF_ADDR", Usage: "serve Go's profiling endpoints (/debug/pprof/) on this host:port; empty: off",
			Parse: func(v string) error {
				if v != "" {
					if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
						return fmt.Errorf("want host:port, e.g. 127.0.0.1:6060")
					}
				}
				s.PprofAddr = v
				return nil
			}},
		{Flag: "bulk-chunk-size", Env: "PAYDISPATCH_BULK_CHUNK_SIZE", Default: "10000", Usage: "payments per init workflow of a bulk file",
			Parse: func(v string) error {
				n, err := intIn(v, 1, 10000)
				s.BulkChunkSize = n
				return err
			}},
		{Flag: "duplicate-file-days", Env: "PAYDISPATCH_DUPLICATE_FILE_DAYS", Default: "7",
			Usage: "days a tenant's accepted bulk file is remembered: a file with the same payments (ids aside) within them is refused, 409, unless ?allowDuplicate=true; 0: never",
			Parse: func(v string) error {
				n, err := intIn(v, 0, 366)
				s.DuplicateFileDays = n
				return err
			}},
		{Flag: "insecure-dev", Env: "PAYDISPATCH_INSECURE_DEV", Default: "false", Bool: true,
			Usage: "serve the API to anyone, without tokens (a developer's machine only; a warning is logged at every start)",
			Parse: func(v string) error {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return fmt.Errorf("want true or false")
				}
				s.InsecureDev = b
				return nil
			}},
		{Flag: "idempotency-ttl", Env: "PAYDISPATCH_IDEMPOTENCY_TTL", Default: "24h", Usage: "how long an Idempotency-Key and its answer are kept",
			Parse: func(v string) error {
				d, err := durationIn(v, time.Minute, 30*24*time.Hour)
				s.IdempotencyTTL = d
				return err
			}},
		{Flag: "token-rate-limit", Env: "PAYDISPATCH_TOKEN_RATE_LIMIT", Default: "200", Usage: "requests a second each token may make (bursts of twice as many); over it: 429 with Retry-After; 0: unlimited",
			Parse: func(v string) error {
				n, err := intIn(v, 0, 1000000)
				s.TokenRate = n
				return err
			}},
		{Flag: "auth-failure-limit", Env: "PAYDISPATCH_AUTH_FAILURE_LIMIT", Default: "30", Usage: "failed authentications (unknown, revoked or expired tokens) a minute each client address may make, in bursts of as many; beyond: 429 with Retry-After, before any token lookup, but for tokens that authenticated recently; 0: unlimited",
			Parse: func(v string) error {
				n, err := intIn(v, 0, 1000000)
				s.AuthFailureLimit = n
				return err
			}},
		{Flag: "max-body", Env: "PAYDISPATCH_MAX_BODY", Default: "65536", Usage: "largest body of a single request (a payment, an account), in bytes; over it: 413",
			Parse: func(v string) error {
				n, err := intIn(v, 1024, 16<<20)
				s.MaxBody = n
				return err
			}},
		{Flag: "max-bulk-body", Env: "PAYDISPATCH_MAX_BULK_BODY", Default: "536870912", Usage: "largest bulk file, in bytes; over it: 413",
			Parse: func(v string) error {
				n, err := intIn(v, 1<<20, 4<<30)
				s.MaxBulkBody = n
				return err
			}},
		{Flag: "metrics-tenant-labels", Env: "PAYDISPATCH_METRICS_TENANT_LABELS", Default: "false", Bool: true,
			Usage: "export the executions by tenant, under the tenants' names, at /metrics (which answers without a token); off: no tenant's name there",
			Parse: func(v string) error {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return fmt.Errorf("want true or false")
				}
				s.MetricsTenantLabels = b
				return nil
			}},
		{Flag: "migrate", Env: "PAYDISPATCH_MIGRATE_ON_START", Default: "true", Usage: "apply pending schema migrations at start",
			Parse: func(v string) error {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return fmt.Errorf("want true or false")
				}
				s.MigrateOnStart = b
				return nil
			}},
	}
}

// Dispatch is how dispatch cycles are triggered.
type Dispatch struct {
	Mode string // schedule or lease
}

// DispatchSettings binds d's settings.
func DispatchSettings(d *Dispatch) []*Setting {
	return []*Setting{
		{Flag: "dispatch-mode", Env: "PAYDISPATCH_DISPATCH_MODE", Default: "schedule",
			Usage: "schedule: a Temporal Schedule fires each cycle; lease: every replica ticks in-process and the holder of a PostgreSQL lease runs the cycle",
			Parse: func(v string) error {
				if v != "schedule" && v != "lease" {
					return fmt.Errorf("want schedule or lease")
				}
				d.Mode = v
				return nil
			}},
	}
}

// Log is how paydispatch logs.
type Log struct {
	Level  slog.Level
	Format string
}

// LogSettings binds l's settings.
func LogSettings(l *Log) []*Setting {
	return []*Setting{
		{Flag: "log-level", Env: "PAYDISPATCH_LOG_LEVEL", Default: "info", Usage: "debug, info, warn or error",
			Parse: func(v string) error {
				if err := l.Level.UnmarshalText([]byte(v)); err != nil {
					return fmt.Errorf("want debug, info, warn or error")
				}
				return nil
			}},
		{Flag: "log-format", Env: "PAYDISPATCH_LOG_FORMAT", Default: "text", Usage: "text or json",
			Parse: func(v string) error {
				if v != "text" && v != "json" {
					return fmt.Errorf("want text or json")
				}
				l.Format = v
				return nil
			}},
	}
}

func intIn(v string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("want a whole number from %d to %d", lo, hi)
	}
	return n, nil
}

func durationIn(v string, lo, hi time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		return 0, fmt.Errorf("want a duration from %v to %v, e.g. 30s", lo, hi)
	}
	return d, nil
}

// Temporal is which Temporal cluster to use.
type Temporal struct {
	Address, Namespace                                string
	TLSCertFile, TLSKeyFile, TLSCAFile, TLSServerName string
	EmbeddedPort                                      int
	EmbeddedLogLevel                                  string
	// EmbeddedStore: "" (auto), "postgres" or "sqlite".
	EmbeddedStore string
	// EmbeddedRetention: how long the embedded server keeps a closed
	// workflow (0: as the namespace has it).
	EmbeddedRetention time.Duration
	// UIPort is the port of the embedded server's Web UI on 127.0.0.1:
	// UIPortAuto, UIPortOff, 0 (any free port) or a port.
	UIPort int
	// UIURL is the base URL of a Temporal Web UI for links to workflows
	// (the UI of the cluster at Address); empty: the embedded one's.
	UIURL string
}

// The Web UI ports that are not ports.
const (
	// UIPortAuto: the frontend's port + 1000 (8233 beside 7233, as
	// Temporal's CLI has it), any free port when that one is taken or the
	// frontend's port is 0.
	UIPortAuto = -2
	// UIPortOff: no Web UI.
	UIPortOff = -1
)

// TemporalSettings binds t's settings.
func TemporalSettings(t *Temporal) []*Setting {
	str := func(flag, env, def, usage string, dst *string) *Setting {
		return &Setting{Flag: flag, Env: env, Default: def, Usage: usage, Parse: func(v string) error { *dst = v; return nil }}
	}
	return []*Setting{
		{Flag: "temporal-address", Env: "TEMPORAL_ADDRESS", Usage: "Temporal frontend host:port; empty embeds Temporal's server with its data in the data directory",
			Parse: func(v string) error {
				if v != "" {
					if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
						return fmt.Errorf("want host:port, e.g. temporal.internal:7233")
					}
				}
				t.Address = v
				return nil
			}},
		{Flag: "temporal-namespace", Env: "TEMPORAL_NAMESPACE", Default: "default", Usage: "Temporal namespace",
			Parse: func(v string) error {
				if v == "" {
					return fmt.Errorf("want a namespace name, e.g. default")
				}
				t.Namespace = v
				return nil
			}},
		str("temporal-tls-cert", "TEMPORAL_TLS_CERT", "", "client certificate (PEM) for mutual TLS to TEMPORAL_ADDRESS", &t.TLSCertFile),
		str("temporal-tls-key", "TEMPORAL_TLS_KEY", "", "client key (PEM) for mutual TLS", &t.TLSKeyFile),
		str("temporal-tls-ca", "TEMPORAL_TLS_CA", "", "CA bundle (PEM) that signs the Temporal server's certificate", &t.TLSCAFile),
		str("temporal-tls-server-name", "TEMPORAL_TLS_SERVER_NAME", "", "server name to verify in the Temporal server's certificate", &t.TLSServerName),
		{Flag: "temporal-port", Env: "PAYDISPATCH_TEMPORAL_PORT", Default: "7233", Usage: "gRPC port of the embedded Temporal frontend (0: any free port)",
			Parse: func(v string) error {
				n, err := intIn(v, 0, 65535)
				t.EmbeddedPort = n
				return err
			}},
		{Flag: "temporal-log-level", Env: "PAYDISPATCH_TEMPORAL_LOG_LEVEL", Default: "error", Usage: "log level of the embedded Temporal server: debug, info, warn, error or fatal",
			Parse: func(v string) error {
				switch v {
				case "debug", "info", "warn", "error", "fatal":
					t.EmbeddedLogLevel = v
					return nil
				}
				return fmt.Errorf("want debug, info, warn, error or fatal")
			}},
		{Flag: "temporal-store", Env: "PAYDISPATCH_TEMPORAL_STORE", Default: "auto",
			Usage: "where the embedded Temporal keeps its data: auto (a data directory keeps its store; a new one gets sqlite), sqlite (data-dir/temporal/temporal.db) or postgres (databases temporal and temporal_visibility beside paydispatch's)",
			Parse: func(v string) error {
				switch v {
				case "auto":
					t.EmbeddedStore = ""
					return nil
				case "postgres", "sqlite":
					t.EmbeddedStore = v
					return nil
				}
				return fmt.Errorf("want auto, sqlite or postgres")
			}},
		{Flag: "temporal-ui-port", Env: "PAYDISPATCH_TEMPORAL_UI_PORT", Default: "auto",
			Usage: "port of the embedded Temporal's Web UI on 127.0.0.1: auto (the frontend's port + 1000, e.g. 8233; any free port when taken), 0 (any free port), a port, or off",
			Parse: func(v string) error {
				switch v {
				case "auto":
					t.UIPort = UIPortAuto
					return nil
				case "off", "-1":
					t.UIPort = UIPortOff
					return nil
				}
				n, err := intIn(v, 0, 65535)
				if err != nil {
					return fmt.Errorf("want auto, off or a port from 0 to 65535 (0: any free port)")
				}
				t.UIPort = n
				return nil
			}},
		{Flag: "temporal-ui-url", Env: "PAYDISPATCH_TEMPORAL_UI_URL",
			Usage: "base URL of the Temporal Web UI that shows TEMPORAL_ADDRESS's workflows, e.g. http://temporal-ui.internal:8080, for the API's links to a payment's execution; empty: the embedded Temporal's own UI",
			Parse: func(v string) error {
				if v != "" {
					u, err := url.Parse(v)
					if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
						return fmt.Errorf("want an http:// or https:// URL, e.g. http://127.0.0.1:8080")
					}
				}
				t.UIURL = strings.TrimRight(v, "/")
				return nil
			}},
		{Flag: "temporal-retention", Env: "PAYDISPATCH_TEMPORAL_RETENTION",
			Usage: "how long the embedded Temporal keeps a closed workflow before deleting it, e.g. 24h (empty: as the namespace has it; a new one gets Temporal's 24h)",
			Parse: func(v string) error {
				if v == "" {
					t.EmbeddedRetention = 0
					return nil
				}
				d, err := time.ParseDuration(v)
				if err != nil || d < time.Minute {
					return fmt.Errorf("want a duration of at least 1m, e.g. 72h")
				}
				t.EmbeddedRetention = d
				return nil
			}},
	}
}
