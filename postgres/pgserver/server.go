package pgserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Port is the port number the server's socket file is named for. The server
// listens on no TCP port; the number only names the socket.
const Port = 5432

// Options configure a server.
type Options struct {
	// Dir is the directory the server owns: the cluster in Dir/data, the
	// socket in Dir/run, the server log in Dir/server.log. Created if absent.
	Dir string
	// BinDir holds initdb and postgres; found with FindBinDir when empty.
	BinDir string
	// User is the database superuser created by initdb (default "paydispatch").
	User string
	// Database is created at start when it does not exist (skipped when empty).
	Database string
	// Ephemeral trades durability for speed (fsync off): for tests and
	// benchmarks whose data is thrown away, never for payments.
	Ephemeral bool
	// Settings are extra server settings (name → value), applied at start.
	Settings map[string]string
	// StartTimeout bounds initdb plus start (default 60 s).
	StartTimeout time.Duration
	Logger       *slog.Logger
}

// Server is a running PostgreSQL server.
type Server struct {
	opts      Options
	binDir    string
	pgdata    string
	socketDir string
	logPath   string
	cred      *syscall.Credential

	pid  int
	done chan struct{} // closed when the server process has exited
	err  error         // the process's exit status, set before done closes
	// attached: the cluster was already served by another live paydispatch
	// process (serve, while `migrate` or `config` runs beside it); this
	// Server uses it and never stops it.
	attached bool
}

// Start initializes the cluster on first use and starts the server. It
// returns once the server accepts connections and the database exists.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Dir == "" {
		return nil, errors.New("pgserver: Options.Dir is required")
	}
	if opts.User == "" {
		opts.User = "paydispatch"
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	binDir, err := FindBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("pgserver: resolve %s: %w", opts.Dir, err)
	}
	s := &Server{
		opts:    opts,
		binDir:  binDir,
		pgdata:  filepath.Join(dir, "data"),
		logPath: filepath.Join(dir, "server.log"),
	}
	s.socketDir = socketDirFor(dir)

	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	if err := s.prepareDirs(dir); err != nil {
		return nil, err
	}
	if err := s.initCluster(ctx); err != nil {
		return nil, err
	}
	if err := s.clearStaleLock(ctx); err != nil {
		return nil, err
	}
	if s.attached {
		if err := s.waitReady(ctx); err != nil {
			return nil, err
		}
		opts.Logger.Info("using the PostgreSQL another paydispatch process runs", "pid", s.pid, "socket_dir", s.socketDir)
		return s, nil
	}
	// A kill -9'd server can leave backends attached to its shared memory
	// for a moment; the new postmaster refuses to start until they are gone.
	for attempt := 1; ; attempt++ {
		err = s.startProcess(ctx)
		if err == nil || attempt == 5 || !strings.Contains(err.Error(), "shared memory block is still in use") {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		return nil, err
	}
	if opts.Database != "" {
		if err := s.ensureDatabase(ctx, opts.Database); err != nil {
			_ = s.Stop(context.Background())
			return nil, err
		}
	}
	opts.Logger.Info("embedded PostgreSQL started",
		"bin_dir", binDir, "data_dir", s.pgdata, "socket_dir", s.socketDir, "pid", s.pid)
	return s, nil
}

// socketDirFor keeps the socket path under the kernel's 107-byte limit: in
// dir/run when short enough, else in a directory under /tmp named for dir.
func socketDirFor(dir string) string {
	d := filepath.Join(dir, "run")
	if len(d)+len("/.s.PGSQL.5432") < 100 {
		return d
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(os.TempDir(), "paydispatch-pg-"+hex.EncodeToString(sum[:6]))
}

func (s *Server) prepareDirs(dir string) error {
	cred, err := serverCredential()
	if err != nil {
		return err
	}
	s.cred = cred
	// Parents we create must be enterable by the server user; the server's
	// own directories below are 0700.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("pgserver: create %s: %w", filepath.Dir(dir), err)
	}
	for _, d := range []string{dir, s.socketDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("pgserver: create %s: %w", d, err)
		}
		if cred != nil {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return fmt.Errorf("pgserver: hand %s to the server user: %w", d, err)
			}
			if err := checkReachable(d, cred); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Server) initCluster(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(s.pgdata, "PG_VERSION")); err == nil {
		return nil
	}
	// A half-made cluster (initdb interrupted) is useless and blocks initdb.
	if err := os.RemoveAll(s.pgdata); err != nil {
		return fmt.Errorf("pgserver: clear incomplete cluster %s: %w", s.pgdata, err)
	}
	args := []string{"-D", s.pgdata, "-U", s.opts.User, "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-instructions"}
	if s.opts.Ephemeral {
		args = append(args, "--no-sync")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(s.binDir, "initdb"), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	cmd.Dir = os.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgserver: initdb %s: %w: %s", s.pgdata, err, lastLines(out, 5))
	}
	// Only the unix socket is used, and only the server user and root can
	// reach it (the socket directory is 0700), so trust stays local.
	hba := "local all all trust\n"
	if err := os.WriteFile(filepath.Join(s.pgdata, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return fmt.Errorf("pgserver: write pg_hba.conf: %w", err)
	}
	if s.cred != nil {
		_ = os.Chown(filepath.Join(s.pgdata, "pg_hba.conf"), int(s.cred.Uid), int(s.cred.Gid))
	}
	s.opts.Logger.Info("initialized PostgreSQL cluster", "data_dir", s.pgdata)
	return nil
}

// clearStaleLock deals with a postmaster.pid. A server running from this
// cluster whose parent lives is in use (say by serve, while migrate runs):
// it is attached to, not touched. One whose parent is gone is an orphan and
// is shut down. A pid file naming a dead or unrelated process is removed,
// since PostgreSQL would refuse to start if that pid now belongs to someone
// else.
func (s *Server) clearStaleLock(ctx context.Context) error {
	pidFile := filepath.Join(s.pgdata, "postmaster.pid")
	data, err := os.ReadFile(pidFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pgserver: read %s: %w", pidFile, err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err == nil && pid > 0 && s.isOurPostmaster(pid) {
		if parentAlive(pid) {
			s.attached, s.pid = true, pid
			s.done = make(chan struct{}) // never closes: not ours to watch
			return nil
		}
		s.opts.Logger.Warn("stopping PostgreSQL left running by an earlier run", "pid", pid)
		_ = syscall.Kill(pid, syscall.SIGINT)
		if waitGone(ctx, pid, 30*time.Second) {
			return nil
		}
		_ = syscall.Kill(pid, syscall.SIGQUIT)
		if waitGone(ctx, pid, 10*time.Second) {
			return nil
		}
		return fmt.Errorf("pgserver: PostgreSQL pid %d from an earlier run does not stop; stop it by hand", pid)
	}
	s.opts.Logger.Warn("removing stale postmaster.pid", "pid", first)
	if err := os.Remove(pidFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pgserver: remove stale %s: %w", pidFile, err)
	}
	return nil
}

func (s *Server) isOurPostmaster(pid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if len(args) == 0 || filepath.Base(args[0]) != "postgres" {
		return false
	}
	for i, a := range args {
		if a == "-D" && i+1 < len(args) && args[i+1] == s.pgdata {
			return true
		}
	}
	return false
}

// parentAlive tells whether pid's parent is a live process other than init
// (an orphan is re-parented to init or a subreaper).
func parentAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// Fields after the command name (which may hold spaces) in parentheses.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	fields := strings.Fields(rest)
	if len(fields) < 2 {
		return false
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil || ppid <= 1 {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", ppid))
	return err == nil && len(cmdline) > 0
}

func waitGone(ctx context.Context, pid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// sharedBuffers is a quarter of the memory the server may use (the
// usual advice for a dedicated server), between 128 MB and 8 GB: the
// working set stays in PostgreSQL's own cache as the tables grow (a run
// of 100,000 payments leaves 909 MB, nearly the 1 GB it had).
func sharedBuffers(limit int64) string {
	const mb = 1 << 20
	return strconv.FormatInt(min(max(limit/4, 128*mb), 8192*mb)/mb, 10) + "MB"
}

// memoryLimit is the machine's memory, or the cgroup's limit when lower;
// 4 GB when neither can be read.
func memoryLimit() int64 {
	limit := int64(4 << 30)
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil && kb > 0 {
					limit = kb << 10
				}
			}
		}
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && n < limit {
			limit = n
		}
	}
	return limit
}

func (s *Server) settings() []string {
	set := map[string]string{
		"listen_addresses":        "",
		"unix_socket_directories": s.socketDir,
		"port":                    strconv.Itoa(Port),
		"max_connections":         "200",
		"shared_buffers":          sharedBuffers(memoryLimit()),
		"max_wal_size":            "4GB",
		// Every page written after a checkpoint is first logged whole:
		// checkpoints every 15 minutes rather than 5 log a third of the
		// full pages, for up to 15 minutes of WAL to replay after a crash.
		"checkpoint_timeout": "15min",
		// The retention cleaner deletes a round's history every minute;
		// its space is reused once autovacuum has been through. Visits
		// every 10 s rather than every minute keep the tables it bounds
		// near their live size (docs/operating.md, Retention).
		"autovacuum_naptime": "10s",
		"logging_collector":  "off",
	}
	if s.opts.Ephemeral {
		set["fsync"] = "off"
		set["synchronous_commit"] = "off"
		set["full_page_writes"] = "off"
	}
	for k, v := range s.opts.Settings {
		set[k] = v
	}
	args := make([]string, 0, 2*len(set)+2)
	args = append(args, "-D", s.pgdata)
	for k, v := range set {
		args = append(args, "-c", k+"="+v)
	}
	return args
}

func (s *Server) startProcess(ctx context.Context) error {
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("pgserver: open server log: %w", err)
	}
	defer logFile.Close()
	startOffset, _ := logFile.Seek(0, 2)

	cmd := exec.Command(filepath.Join(s.binDir, "postgres"), s.settings()...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = s.pgdata
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: s.cred,
		// Our own process group: a terminal's Ctrl-C reaches us, and we stop
		// the server after our connections are closed.
		Setpgid: true,
		// If we die without stopping it (kill -9), the kernel asks the server
		// for a fast shutdown. Pdeathsig follows the forking OS thread, so
		// that thread stays locked until the server exits (below).
		Pdeathsig: syscall.SIGINT,
	}

	s.done = make(chan struct{})
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		s.err = cmd.Wait()
		close(s.done)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("pgserver: start postgres: %w", err)
	}
	s.pid = cmd.Process.Pid

	if err := s.waitReady(ctx); err != nil {
		_ = syscall.Kill(s.pid, syscall.SIGQUIT)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
		}
		return fmt.Errorf("%w; server log: %s", err, s.logSince(startOffset))
	}
	return nil
}

func (s *Server) waitReady(ctx context.Context) error {
	for {
		pingCtx, cancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgx.Connect(pingCtx, s.ConnString("postgres"))
		if err == nil {
			err = conn.Ping(pingCtx)
			conn.Close(context.Background())
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("pgserver: postgres exited during start (%v)", s.err)
		case <-ctx.Done():
			return fmt.Errorf("pgserver: postgres not ready: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *Server) ensureDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, s.ConnString("postgres"))
	if err != nil {
		return fmt.Errorf("pgserver: connect: %w", err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("pgserver: look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("pgserver: create database %s: %w", name, err)
	}
	return nil
}

// ConnString is a libpq keyword/value connection string for database.
func (s *Server) ConnString(database string) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable",
		s.socketDir, Port, s.opts.User, database)
}

// DataDir is the cluster directory (PGDATA).
func (s *Server) DataDir() string { return s.pgdata }

// SocketDir is the directory holding the server's unix socket.
func (s *Server) SocketDir() string { return s.socketDir }

// PID is the postmaster's process id.
func (s *Server) PID() int { return s.pid }

// Done is closed when the server process exits, expectedly or not.
func (s *Server) Done() <-chan struct{} { return s.done }

// Stop asks for a fast shutdown (open sessions are disconnected, a
// checkpoint is written) and waits for it; if ctx ends first, it forces an
// immediate shutdown, which PostgreSQL recovers from at the next start.
func (s *Server) Stop(ctx context.Context) error {
	if s.attached {
		return nil
	}
	select {
	case <-s.done:
		return nil
	default:
	}
	_ = syscall.Kill(s.pid, syscall.SIGINT)
	select {
	case <-s.done:
		s.opts.Logger.Info("embedded PostgreSQL stopped")
		return nil
	case <-ctx.Done():
	}
	_ = syscall.Kill(s.pid, syscall.SIGQUIT)
	select {
	case <-s.done:
		return fmt.Errorf("pgserver: fast shutdown timed out, forced immediate shutdown: %w", ctx.Err())
	case <-time.After(10 * time.Second):
		return errors.New("pgserver: postgres did not stop")
	}
}

func (s *Server) logSince(offset int64) string {
	data, err := os.ReadFile(s.logPath)
	if err != nil || int64(len(data)) < offset {
		return "(unreadable)"
	}
	return lastLines(data[offset:], 8)
}

func lastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte(" | ")))
}
