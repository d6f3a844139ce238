package pgserver_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/postgres/pgserver"
)

func tempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	// The server user (when we are root) must be able to enter it, and
	// t.TempDir makes 0700 directories two levels deep.
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "pg")
}

func start(t *testing.T, dir string) *pgserver.Server {
	t.Helper()
	s, err := pgserver.Start(context.Background(), pgserver.Options{Dir: dir, Database: "app", Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

func query(t *testing.T, s *pgserver.Server, sql string, args ...any) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.ConnString("app"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func execSQL(t *testing.T, s *pgserver.Server, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.ConnString("app"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
}

func TestRestartKeepsData(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	s := start(t, dir)
	execSQL(t, s, "CREATE TABLE kept AS SELECT 42 AS v")
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.DataDir(), "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("clean stop left postmaster.pid: %v", err)
	}
	s2 := start(t, dir)
	if v := query(t, s2, "SELECT v FROM kept"); v != 42 {
		t.Fatalf("after restart v = %d", v)
	}
}

// TestStalePidFileOfAnotherProcess: a postmaster.pid naming a live process
// that is not our server (pid reuse after a crash) does not block the start.
func TestStalePidFileOfAnotherProcess(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	s := start(t, dir)
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill() }()
	pidFile := filepath.Join(s.DataDir(), "postmaster.pid")
	content := strconv.Itoa(other.Process.Pid) + "\n" + s.DataDir() + "\n1700000000\n5432\n"
	if err := os.WriteFile(pidFile, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	s2 := start(t, dir)
	if query(t, s2, "SELECT 1") != 1 {
		t.Fatal("server not answering")
	}
}

// TestSecondStartAttaches: a second Start on a cluster another live process
// serves (serve, while migrate runs) uses that server and never stops it.
func TestSecondStartAttaches(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	s := start(t, dir)
	execSQL(t, s, "CREATE TABLE kept AS SELECT 7 AS v")
	s2 := start(t, dir)
	if s2.PID() != s.PID() {
		t.Fatalf("second start runs pid %d, want the running %d", s2.PID(), s.PID())
	}
	if v := query(t, s2, "SELECT v FROM kept"); v != 7 {
		t.Fatalf("v = %d", v)
	}
	if err := s2.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
		t.Fatal("the attached user's Stop stopped the server")
	case <-time.After(500 * time.Millisecond):
	}
	if query(t, s, "SELECT 1") != 1 {
		t.Fatal("server gone")
	}
}

func TestNoBinaries(t *testing.T) {
	t.Parallel()
	_, err := pgserver.FindBinDir(t.TempDir())
	if err == nil {
		t.Fatal("an empty directory passed as the bin dir")
	}
	if _, err := pgserver.Start(context.Background(), pgserver.Options{Dir: tempDir(t), BinDir: "/nonexistent"}); err == nil {
		t.Fatal("started without binaries")
	}
}
