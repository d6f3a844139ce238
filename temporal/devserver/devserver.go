// Package devserver runs Temporal's own server in-process, the way
// Temporal's development server does: all services in one process, SQLite
// for persistence (a file, so open workflows survive a restart, or memory
// for tests). It is what paydispatch uses when no TEMPORAL_ADDRESS is set.
// It is Temporal's server, not a stand-in: workers and clients talk to it
// over gRPC like to any cluster, and the Temporal CLI or UI can attach to
// its address.
package devserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	otelsdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"go.uber.org/fx"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Options configure the embedded server.
type Options struct {
	// DBPath is the SQLite file; created (with its schema) when absent.
	// Empty keeps everything in memory, lost when the process ends.
	// Ignored when Postgres is set.
	DBPath string
	// Postgres, when set, keeps the data in PostgreSQL instead of SQLite.
	Postgres *Postgres
	// IP the frontend binds (default 127.0.0.1).
	IP string
	// Port of the frontend's gRPC endpoint; 0 picks a free one.
	Port int
	// Namespaces registered at start (default: "default").
	Namespaces []string
	// LogLevel of the server's own logs: debug, info, warn, error (default error).
	LogLevel string
	// AllVisibilityIndexes leaves the indexes of Temporal's SQLite
	// visibility table alone. By default a database file keeps only those
	// behind the usual lists (see keptVisibilityIndexes), which cuts what
	// a workflow's start and close cost in the store to about a third; a
	// file trimmed once stays trimmed. The in-memory store always has
	// them all.
	AllVisibilityIndexes bool
	// TaskQueuePartitions is the number of partitions of every task queue
	// of a new store (default 1). Temporal's default, 4, spreads a queue
	// over matching hosts; in one process it only adds forwarding between
	// partitions. A store keeps the count it was created with (see
	// storePartitions): one from before this option runs with 4.
	TaskQueuePartitions int
	// Retention is how long a closed workflow is kept before the server
	// deletes it, in every namespace of Namespaces: set when a namespace
	// is created, and changed on start when it differs. 0 leaves it as it
	// is (Temporal's 24 hours for a new namespace). From MinRetention.
	Retention time.Duration
}

// MinRetention is the shortest Retention: deletion a minute after a
// workflow closes, for benchmarks that measure the cost of deletion.
const MinRetention = time.Minute

// RetentionJitter is how long after its retention a closed workflow may
// be deleted. It spreads deletions over half the retention, at most
// Temporal's own 30 minutes: the deletions of a crowd of workflows that
// closed together do not all come due in one second.
func RetentionJitter(retention time.Duration) time.Duration {
	return min(30*time.Minute, retention/2)
}

// Server is a running embedded Temporal server.
type Server struct {
	srv      temporal.Server
	hostPort string
	stopping *atomic.Bool
}

const clusterName = "active"

// Start starts the server and waits until its frontend answers.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.IP == "" {
		o.IP = "127.0.0.1"
	}
	if len(o.Namespaces) == 0 {
		o.Namespaces = []string{"default"}
	}
	if o.LogLevel == "" {
		o.LogLevel = "error"
	}
	if o.Retention != 0 && o.Retention < MinRetention {
		return nil, fmt.Errorf("temporal: retention %v: want at least %v", o.Retention, MinRetention)
	}
	var (
		srv      temporal.Server
		ports    Ports
		stopping = &atomic.Bool{}
		err      error
	)
	// A remembered port can be taken between the check and the bind; then
	// the server reports a fatal error, and a fresh set of ports is tried.
	for attempt := 0; ; attempt++ {
		ports, err = choosePorts(o, attempt > 0)
		if err != nil {
			return nil, err
		}
		srv, err = newServer(o, ports, stopping)
		if err == nil || attempt == 2 || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	o.Port = ports.Frontend
	s := &Server{srv: srv, hostPort: net.JoinHostPort(o.IP, strconv.Itoa(o.Port)), stopping: stopping}
	if err := s.waitReady(ctx, o.Namespaces[0]); err != nil {
		_ = s.Stop()
		return nil, err
	}
	if o.Retention > 0 {
		if err := s.setRetention(ctx, o.Namespaces, o.Retention); err != nil {
			_ = s.Stop()
			return nil, err
		}
	}
	stopping.Store(false)
	return s, nil
}

// newServer sets up persistence and namespaces and starts the services;
// a fatal report from the server comes back as an error.
func newServer(o Options, ports Ports, stopping *atomic.Bool) (srv temporal.Server, err error) {
	defer func() {
		if r := recover(); r != nil {
			fe, ok := r.(fatalError)
			if !ok {
				panic(r)
			}
			err = fe
		}
	}()
	o.Port = ports.Frontend
	cfg, sqlCfg, err := serverConfig(o, ports)
	if err != nil {
		return nil, err
	}
	created := o.DBPath == ""
	if o.Postgres != nil {
		if created, err = setupPostgres(context.Background(), o.Postgres); err != nil {
			return nil, err
		}
	} else if o.DBPath != "" {
		if err := os.MkdirAll(filepath.Dir(o.DBPath), 0o700); err != nil {
			return nil, fmt.Errorf("temporal: create %s: %w", filepath.Dir(o.DBPath), err)
		}
		if _, err := os.Stat(o.DBPath); errors.Is(err, os.ErrNotExist) {
			if err := sqlite.SetupSchema(sqlCfg); err != nil {
				return nil, fmt.Errorf("temporal: create schema in %s: %w", o.DBPath, err)
			}
			created = true
		}
		// On every start, not only a fresh one: a store created before is
		// trimmed and shaped too.
		if !o.AllVisibilityIndexes {
			if _, err := trimVisibilityIndexes(context.Background(), o.DBPath); err != nil {
				return nil, err
			}
		}
		if err := shapeVisibilityStats(context.Background(), o.DBPath); err != nil {
			return nil, err
		}
	}
	var nss []*sqlite.NamespaceConfig
	for _, ns := range o.Namespaces {
		nc, err := sqlite.NewNamespaceConfig(clusterName, ns, false, nil)
		if err != nil {
			return nil, fmt.Errorf("temporal: namespace %s: %w", ns, err)
		}
		if o.Retention > 0 {
			nc.Detail.Config.Retention = durationpb.New(o.Retention)
		}
		nss = append(nss, nc)
	}
	if err := sqlite.CreateNamespaces(sqlCfg, nss...); err != nil {
		return nil, fmt.Errorf("temporal: register namespaces: %w", err)
	}
	partitions, err := storePartitions(o.sidePath(), created, o.TaskQueuePartitions)
	if err != nil {
		return nil, err
	}
	stopping.Store(true) // quiet until ready
	logger := &quietLogger{inner: tlog.NewZapLogger(tlog.BuildZapLogger(tlog.Config{Level: o.LogLevel})), stopping: stopping}
	dynamic := dynamicconfig.StaticClient{
		// Visibility in SQLite: let queries see new search attributes at once.
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): []dynamicconfig.ConstrainedValue{{Value: true}},
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():      []dynamicconfig.ConstrainedValue{{Value: partitions}},
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key():     []dynamicconfig.ConstrainedValue{{Value: partitions}},
		// The history cache keeps a workflow's mutable state for an
		// hour after its last load, up to 128,000 workflows: every
		// execution of the last hour, so the process grew with the
		// number of payments (about 35 MiB of live heap from 10,000 to
		// 100,000 in BATCH mode, five times that resident at GOGC 400).
		// Thirty seconds outlives a running execution's gaps between
		// tasks (the pre-start buffer, 8 s by default, and a group's
		// span), so what stays is about the executions in flight; a
		// workflow evicted between tasks is read again from the store.
		// Expired entries are swept in the background, not only when
		// looked up again.
		dynamicconfig.HistoryCacheTTL.Key(): []dynamicconfig.ConstrainedValue{{Value: historyCacheTTL}},
		dynamicconfig.HistoryCacheBackgroundEvict.Key(): []dynamicconfig.ConstrainedValue{{Value: dynamicconfig.CacheBackgroundEvictSettings{
			Enabled: true, LoopInterval: 30 * time.Second, MaxEntryPerCall: 1024}}},
		dynamicconfig.NamespaceMinRetentionLocal.Key(): []dynamicconfig.ConstrainedValue{{Value: MinRetention}},
	}
	if o.Retention > 0 {
		dynamic[dynamicconfig.RetentionTimerJitterDuration.Key()] = []dynamicconfig.ConstrainedValue{{Value: RetentionJitter(o.Retention)}}
	}
	// The server's own spans are not exported: its exporters would come
	// from OTEL_TRACES_EXPORTER, which sets paydispatch's traces (the
	// server knows only otlp over gRPC, and refuses to start on any other
	// value, console say). paydispatch's workers trace the workflows.
	srv, err = temporal.NewServerFx(fx.Options(temporal.TopLevelModule, fx.Replace([]otelsdktrace.SpanExporter(nil))),
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(logger),
		temporal.WithCustomMetricsHandler(metrics.NoopMetricsHandler),
		temporal.WithDynamicConfigClient(dynamic),
	)
	if err != nil {
		return nil, fmt.Errorf("temporal: create server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("temporal: start server: %w", err)
	}
	return srv, nil
}

// historyCacheTTL is how long the embedded server's history cache keeps
// a workflow it last loaded.
const historyCacheTTL = 30 * time.Second

// HostPort is the frontend's gRPC address, for clients, workers, the
// Temporal CLI (--address) and UI.
func (s *Server) HostPort() string { return s.hostPort }

// Stop stops every service.
func (s *Server) Stop() error {
	s.stopping.Store(true)
	return s.srv.Stop()
}

// waitReady polls until the frontend serves the namespace.
func (s *Server) waitReady(ctx context.Context, namespace string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		c, err := client.Dial(client.Options{HostPort: s.hostPort, Namespace: namespace})
		if err == nil {
			_, err = c.CheckHealth(ctx, nil)
			if err == nil {
				_, err = c.WorkflowService().DescribeNamespace(ctx, describeNamespace(namespace))
			}
			if err == nil {
				// The frontend answers from persistence before history and
				// matching have joined the membership ring; ask them too.
				err = probeServices(ctx, c, namespace)
			}
			c.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("temporal: server not ready: %v", last)
}

// sidePath is the prefix of the files kept beside the store; empty for
// an in-memory one.
func (o Options) sidePath() string {
	if o.Postgres != nil {
		return o.Postgres.StatePath
	}
	return o.DBPath
}

// serverConfig is the server's configuration and the main store's SQL
// settings (where namespaces are registered).
func serverConfig(o Options, ports Ports) (*config.Config, *config.SQL, error) {
	persistence, sqlCfg, err := persistenceConfig(o)
	if err != nil {
		return nil, nil, err
	}
	frontend := net.JoinHostPort(o.IP, strconv.Itoa(o.Port))
	services := map[string]config.Service{}
	for i, name := range []string{"frontend", "history", "matching", "worker"} {
		rpc := config.RPC{GRPCPort: ports.GRPC[i], MembershipPort: ports.Membership[i], BindOnLocalHost: true}
		if i == 0 {
			rpc.BindOnLocalHost, rpc.BindOnIP = false, o.IP
		}
		services[name] = config.Service{RPC: rpc}
	}
	cfg := &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: "127.0.0.1"},
		},
		Persistence: persistence,
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace:    false,
			FailoverVersionIncrement: 10,
			MasterClusterName:        clusterName,
			CurrentClusterName:       clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{
				clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services:            services,
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
			Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
		}},
		// The server's internal clients (the worker service) dial the frontend.
		PublicClient: config.PublicClient{HostPort: frontend},
	}
	return cfg, sqlCfg, nil
}

func persistenceConfig(o Options) (config.Persistence, *config.SQL, error) {
	if o.Postgres != nil {
		mainCfg, visCfg, err := o.Postgres.sqlConfigs()
		if err != nil {
			return config.Persistence{}, nil, err
		}
		return config.Persistence{
			DefaultStore:     "postgres",
			VisibilityStore:  "postgres-visibility",
			NumHistoryShards: 1,
			DataStores: map[string]config.DataStore{
				"postgres":            {SQL: mainCfg},
				"postgres-visibility": {SQL: visCfg},
			},
		}, mainCfg, nil
	}
	sqlCfg := &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: o.DBPath,
		// Keys are SQLite pragmas (the plugin turns unknown keys into
		// _pragma=key=value, so a misspelt key is silently ignored). WAL
		// with synchronous=NORMAL: a commit appends to the log without an
		// fsync per transaction; a power cut can lose the last commits but
		// never corrupts the file. busy_timeout lets the extra reader
		// connections wait for the writer instead of failing.
		ConnectAttributes: map[string]string{"mode": "rwc", "journal_mode": "wal", "synchronous": "1", "busy_timeout": "10000"},
	}
	if o.DBPath == "" {
		// A shared in-memory database, named so that two servers in one
		// process do not share it.
		sqlCfg.DatabaseName = fmt.Sprintf("paydispatch-%d-%d", os.Getpid(), o.Port)
		sqlCfg.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
	}
	return config.Persistence{
		DefaultStore:     sqliteplugin.PluginName,
		VisibilityStore:  sqliteplugin.PluginName,
		NumHistoryShards: 1,
		DataStores:       map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sqlCfg}},
	}, sqlCfg, nil
}

// Ports are the gRPC and membership ports of the four services (frontend,
// history, matching, worker); Frontend is GRPC[0].
type Ports struct {
	Frontend   int    `json:"-"`
	GRPC       [4]int `json:"grpc"`
	Membership [4]int `json:"membership"`
}

// choosePorts reuses the ports a persistent server used last time when
// they are free: the membership ring is stored with the data, and a
// restart on new ports waits for the old members to time out (about a
// minute). Otherwise, or when fresh, it picks free ones and remembers them.
func choosePorts(o Options, fresh bool) (Ports, error) {
	var p Ports
	file := ""
	if side := o.sidePath(); side != "" {
		file = side + ".ports.json"
		if data, err := os.ReadFile(file); !fresh && err == nil && json.Unmarshal(data, &p) == nil && p.GRPC[0] != 0 {
			if o.Port != 0 {
				p.GRPC[0] = o.Port
			}
			if p.allFree(o.IP) {
				p.Frontend = p.GRPC[0]
				return p, nil
			}
		}
		p = Ports{}
	}
	if o.Port != 0 {
		if err := portFree(o.IP, o.Port); err != nil {
			return p, fmt.Errorf("temporal: frontend port %d is taken (%v): set another port or point TEMPORAL_ADDRESS at a running cluster", o.Port, err)
		}
		p.GRPC[0] = o.Port
	}
	for i := range 4 {
		var err error
		if p.GRPC[i] == 0 {
			if p.GRPC[i], err = freePort(o.IP); err != nil {
				return p, err
			}
		}
		if p.Membership[i], err = freeMembershipPort(); err != nil {
			return p, err
		}
	}
	p.Frontend = p.GRPC[0]
	if file != "" {
		data, _ := json.Marshal(p)
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			return p, err
		}
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return p, fmt.Errorf("temporal: remember ports: %w", err)
		}
	}
	return p, nil
}

func (p Ports) allFree(ip string) bool {
	for i := range 4 {
		host := "127.0.0.1"
		if i == 0 {
			host = ip
		}
		if portFree(host, p.GRPC[i]) != nil || portFree("127.0.0.1", p.Membership[i]) != nil {
			return false
		}
	}
	return true
}

func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("temporal: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freeMembershipPort picks a free port below 32768: Temporal's SQL
// schemas keep a member's port in a SMALLINT, and the kernel's ephemeral
// ports (what port 0 gives) lie above it.
func freeMembershipPort() (int, error) {
	const lo, hi = 20000, 32767
	for range 200 {
		port := lo + rand.IntN(hi-lo+1)
		if portFree("127.0.0.1", port) == nil {
			return port, nil
		}
	}
	return 0, errors.New("temporal: no free port between 20000 and 32767 for the membership ring")
}

func portFree(ip string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}
