package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/kafka"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/postgres/pgserver"
	"github.com/paydispatch/paydispatch/railsim"
)

// stack is what the suite attacks: one PostgreSQL (this process owns it,
// so it can stop it), the rail simulator (in this process: its ledger is
// the evidence and must outlive every fault), and the rest as OS
// processes of the paydispatch binary, supervised: a process that exits
// on its own is started again, as a service manager would.
type stack struct {
	bin, dir string
	log      *slog.Logger

	pgMu   sync.Mutex
	pg     *pgserver.Server
	pgOpts pgserver.Options
	pool   *pgxpool.Pool

	rail     *railsim.Simulator
	railURL  string
	stopRail func()

	// kafka is the Kafka-protocol cluster (in this process, like the
	// rail: its topics are the evidence) the intakes read and the
	// relayers publish events to.
	kafka *kafka.Embedded

	apiAddr, temporalAddr, adminToken string

	mu             sync.Mutex
	procs          map[string]*proc // by name
	stopSupervisor context.CancelFunc
}

// role is one kind of process.
type role struct {
	name string   // the process's name, e.g. exec-2
	args []string // the subcommand and its flags
	env  map[string]string
	kill bool // a target of the random kills
}

// proc is a supervised process.
type proc struct {
	role
	logPath string

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	held     bool // stopped on purpose: not restarted by the supervisor
	starts   int
	ownExits int // exits nobody asked for
}

func startStack(ctx context.Context, bin, dir string, pgBin string, railBehaviour railsim.Behaviour, adminToken string, log *slog.Logger) (_ *stack, err error) {
	s := &stack{bin: bin, dir: dir, log: log, procs: map[string]*proc{}, adminToken: adminToken}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	s.pgOpts = pgserver.Options{Dir: filepath.Join(dir, "postgres"), BinDir: pgBin, Database: postgres.EmbeddedDatabase, Logger: log}
	if s.pg, err = pgserver.Start(ctx, s.pgOpts); err != nil {
		return nil, err
	}
	dbURL := s.pg.ConnString(postgres.EmbeddedDatabase)
	if s.pool, err = postgres.NewPool(ctx, dbURL, 10); err != nil {
		return nil, err
	}
	s.rail = railsim.New(railsim.Options{Behaviour: railBehaviour})
	if s.railURL, s.stopRail, err = s.rail.Start(ctx, "127.0.0.1:0"); err != nil {
		return nil, err
	}
	if s.kafka, err = kafka.StartEmbedded(0, 8, KafkaTopic, KafkaEventsTopic); err != nil {
		return nil, err
	}
	apiPort, err := freePort()
	if err != nil {
		return nil, err
	}
	temporalPort, err := freePort()
	if err != nil {
		return nil, err
	}
	s.apiAddr = "127.0.0.1:" + strconv.Itoa(apiPort)
	s.temporalAddr = "127.0.0.1:" + strconv.Itoa(temporalPort)

	common := map[string]string{
		"DATABASE_URL": dbURL, "TEMPORAL_ADDRESS": s.temporalAddr, "PAYDISPATCH_DB_MAX_CONNS": "10",
		"PAYDISPATCH_LOG_LEVEL": "info", "PAYDISPATCH_DATA_DIR": dir,
		// The claims of a killed relayer come back after this (default
		// 120 s), well above the rail timeout.
		"PAYDISPATCH_RELAY_REAPER_TIMEOUT": reaperTimeout.String(),
		// serve and the kafka-intake processes share the intake topic's
		// partitions; serve and the relayers publish the events.
		"PAYDISPATCH_KAFKA_BROKERS": s.kafka.Brokers()[0], "PAYDISPATCH_KAFKA_TOPIC": KafkaTopic,
		"PAYDISPATCH_KAFKA_EVENTS_TOPIC": KafkaEventsTopic, "PAYDISPATCH_KAFKA_CHUNK": "200",
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range common {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	relayEnv := func() (map[string]string, error) {
		port, err := freePort()
		return with(map[string]string{"PAYDISPATCH_RAIL_URL": s.railURL, "PAYDISPATCH_RAIL_TIMEOUT": railTimeout.String(),
			"PAYDISPATCH_METRICS_ADDR": "127.0.0.1:" + strconv.Itoa(port)}), err
	}
	// Temporal first (its own data directory, SQLite), then serve, which
	// migrates the schema and takes the intake; then the other roles.
	roles := []role{
		{name: "temporal", args: []string{"temporal"}, env: map[string]string{
			"PAYDISPATCH_DATA_DIR": dir, "PAYDISPATCH_TEMPORAL_PORT": strconv.Itoa(temporalPort), "PAYDISPATCH_TEMPORAL_STORE": "sqlite",
		}},
		{name: "serve", kill: true, args: []string{"serve"}, env: with(map[string]string{
			"PAYDISPATCH_HTTP_ADDR": s.apiAddr, "PAYDISPATCH_BOOTSTRAP_TOKEN": adminToken, "PAYDISPATCH_TOKEN_RATE_LIMIT": "0",
			"PAYDISPATCH_DB_MAX_CONNS": "20", "PAYDISPATCH_RAIL_URL": s.railURL, "PAYDISPATCH_RAIL_TIMEOUT": railTimeout.String(),
		})},
	}
	for i := 1; i <= 2; i++ {
		n := strconv.Itoa(i)
		env, err := relayEnv()
		if err != nil {
			return nil, err
		}
		roles = append(roles,
			role{name: "init-" + n, kill: true, args: []string{"worker", "--role", "init"}, env: with(nil)},
			role{name: "exec-" + n, kill: true, args: []string{"worker", "--role", "exec"}, env: with(nil)},
			role{name: "relay-" + n, kill: true, args: []string{"relay"}, env: env},
		)
	}
	for i := 1; i <= 2; i++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		roles = append(roles, role{name: "kafka-intake-" + strconv.Itoa(i), kill: true, args: []string{"kafka-intake"},
			env: with(map[string]string{"PAYDISPATCH_METRICS_ADDR": "127.0.0.1:" + strconv.Itoa(port)})})
	}
	roles = append(roles,
		role{name: "dispatch-schedule", kill: true, args: []string{"worker", "--role", "dispatch", "--dispatch-mode", "schedule"}, env: with(nil)},
		role{name: "dispatch-lease", kill: true, args: []string{"worker", "--role", "dispatch", "--dispatch-mode", "lease"}, env: with(nil)},
	)
	for _, r := range roles {
		p := &proc{role: r, logPath: filepath.Join(dir, "logs", r.name+".log")}
		s.procs[r.name] = p
		if err := s.start(p); err != nil {
			return nil, err
		}
		switch r.name {
		case "temporal":
			if err := waitTCP(ctx, s.temporalAddr, 2*time.Minute); err != nil {
				return nil, fmt.Errorf("the Temporal process: %w (see %s)", err, p.logPath)
			}
		case "serve":
			if err := waitTCP(ctx, s.apiAddr, 2*time.Minute); err != nil {
				return nil, fmt.Errorf("the serve process: %w (see %s)", err, p.logPath)
			}
		}
	}
	superviseCtx, cancel := context.WithCancel(ctx)
	s.stopSupervisor = cancel
	go s.supervise(superviseCtx)
	return s, nil
}

// The chaos stack's Kafka topics.
const (
	KafkaTopic       = "paydispatch.payment-requests"
	KafkaEventsTopic = "paydispatch.payment-events"
)

// railTimeout is the relayers' rail timeout: the simulator's late answers
// come after it, so they are unknown outcomes.
const railTimeout = 2 * time.Second

// reaperTimeout is how long a relayer's claim may stay unsettled before
// another relayer takes it back.
const reaperTimeout = 30 * time.Second

func (s *stack) start(p *proc) error {
	out, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, p.args...)
	cmd.Env = os.Environ()
	for k, v := range p.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: a signal to the suite is not one to it; and
	// it dies with the suite, whatever ends it. Pdeathsig follows the
	// forking OS thread, so that thread stays locked until the process
	// exits.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		out.Close()
		close(exited)
	}()
	if err := <-started; err != nil {
		out.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.mu.Lock()
	p.cmd, p.exited, p.held = cmd, exited, false
	p.starts++
	p.mu.Unlock()
	return nil
}

// supervise starts again, after a second, any process that exited while
// not held.
func (s *stack) supervise(ctx context.Context) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, p := range s.list() {
			p.mu.Lock()
			gone := p.cmd != nil && !p.held && isClosed(p.exited)
			if gone {
				p.ownExits++
				p.held = true // until it is started below
			}
			p.mu.Unlock()
			if gone {
				s.log.Info("process exited on its own; starting it again", "process", p.name, "log", p.logPath)
				time.Sleep(time.Second)
				if err := s.start(p); err != nil {
					s.log.Error("restart", "process", p.name, "err", err)
				}
			}
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (s *stack) list() []*proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*proc, 0, len(s.procs))
	for _, p := range s.procs {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// targets are the processes the random kills choose from.
func (s *stack) targets() []*proc {
	var out []*proc
	for _, p := range s.list() {
		if p.kill {
			out = append(out, p)
		}
	}
	return out
}

// signal sends sig to p and waits for it to exit (up to limit, then
// SIGKILL); p stays down until started again.
func (s *stack) halt(p *proc, sig syscall.Signal, limit time.Duration) {
	p.mu.Lock()
	p.held = true
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil || isClosed(exited) {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// restartPostgres stops the server with sig (SIGINT: fast shutdown;
// SIGQUIT: immediate, recovered from its WAL at the next start), keeps it
// down for down, and starts it again on the same directory and socket.
func (s *stack) restartPostgres(ctx context.Context, sig syscall.Signal, down time.Duration) error {
	s.pgMu.Lock()
	defer s.pgMu.Unlock()
	_ = syscall.Kill(s.pg.PID(), sig)
	select {
	case <-s.pg.Done():
	case <-time.After(time.Minute):
		return errors.New("PostgreSQL did not stop within a minute")
	}
	time.Sleep(down)
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if s.pg, err = pgserver.Start(ctx, s.pgOpts); err == nil {
			return nil
		}
		time.Sleep(2 * time.Second)
	}
	return fmt.Errorf("PostgreSQL did not start again: %w", err)
}

func (s *stack) close() {
	if s.stopSupervisor != nil {
		s.stopSupervisor()
	}
	for _, p := range s.list() {
		s.halt(p, syscall.SIGTERM, 30*time.Second)
	}
	if s.stopRail != nil {
		s.stopRail()
	}
	if s.kafka != nil {
		s.kafka.Close()
	}
	if s.pool != nil {
		s.pool.Close()
	}
	s.pgMu.Lock()
	defer s.pgMu.Unlock()
	if s.pg != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.pg.Stop(ctx)
	}
}

// freePort picks a free port above Linux's ephemeral range (32768–60999),
// so no outgoing connection takes it while its process restarts.
func freePort() (int, error) {
	for range 100 {
		port := 61000 + rand.IntN(4500)
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			ln.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free port found in 61000–65499")
}

func waitTCP(ctx context.Context, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %s", addr, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
