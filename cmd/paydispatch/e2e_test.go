package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// The binary under test, built once.
var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "paydispatch-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "paydispatch")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// dataDir is a data directory the embedded server's user can reach.
func dataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "data")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type proc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
}

// e2eToken is the first admin token of every serve these tests start
// (PAYDISPATCH_BOOTSTRAP_TOKEN). The package's HTTP calls send it: the
// default transport adds it to any request without an Authorization
// header, so the tests read as a client with an admin token would call.
const e2eToken = "pd_e2e-admin-token-for-the-end-to-end-tests"

func init() { http.DefaultTransport = bearer{base: http.DefaultTransport, token: e2eToken} }

type bearer struct {
	base  http.RoundTripper
	token string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

func startServe(t *testing.T, data, addr string) *proc {
	t.Helper()
	return startServeOn(t, data, addr, 0)
}

// startServeOn starts serve with its embedded Temporal frontend on
// temporalPort (0: any free port).
func startServeOn(t *testing.T, data, addr string, temporalPort int, extra ...string) *proc {
	t.Helper()
	args := append([]string{"serve", "--http-addr", addr, "--data-dir", data,
		"--temporal-port", strconv.Itoa(temporalPort), "--temporal-log-level", "fatal"}, extra...)
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL=", "TEMPORAL_ADDRESS=", "PAYDISPATCH_BOOTSTRAP_TOKEN="+e2eToken,
		"PAYDISPATCH_TOKEN_RATE_LIMIT=0") // the tests poll hundreds of payments a second
	p := &proc{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = &syncWriter{w: p.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() { stopServe(p, data) })
	began := time.Now()
	waitReady(t, p, addr)
	t.Logf("serve ready in %v", time.Since(began).Round(time.Millisecond))
	return p
}

// stopServe stops serve gracefully (its PostgreSQL with it) and waits
// until the server has left the data directory, so the test's temporary
// directory can be removed.
func stopServe(p *proc, data string) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
	}
	pid := filepath.Join(data, "postgres", "data", "postmaster.pid")
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(pid); os.IsNotExist(err) {
			return
		}
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func waitReady(t *testing.T, p *proc, addr string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("serve exited early: %v\n%s", err, p.stderr)
		default:
		}
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("serve not ready in time:\n%s", p.stderr)
}

// embeddedConn connects to the embedded server serve started in data.
func embeddedConn(t *testing.T, data string) *pgx.Conn {
	t.Helper()
	sock := filepath.Join(data, "postgres", "run")
	conn, err := pgx.Connect(context.Background(), "host="+sock+" user=paydispatch dbname=paydispatch")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestServeLifecycle: serve with no DATABASE_URL answers /readyz, stops on
// SIGTERM, starts again with its data, and survives kill -9.
func TestServeLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	// Not parallel: each runs a whole serve (PostgreSQL and Temporal).
	data, addr := dataDir(t), freeAddr(t)

	p := startServe(t, data, addr)
	conn := embeddedConn(t, data)
	if _, err := conn.Exec(context.Background(),
		`INSERT INTO dispatch_audit_log (item_type, item_id, action) VALUES ('PAYMENT', 'marker', 'E2E')`); err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())

	// Tools run beside serve use its database, and leave it running.
	for _, args := range [][]string{{"config", "set", "PAYMENT", "batch_size=700"}, {"migrate"}} {
		cmd := exec.Command(binary(t), append(args, "--data-dir", data)...)
		cmd.Env = append(os.Environ(), "DATABASE_URL=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v beside serve: %v\n%s", args, err, out)
		}
	}
	if resp, err := http.Get("http://" + addr + "/readyz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("serve not ready after tools ran beside it: %v", err)
	}
	cmd := exec.Command(binary(t), "config", "get", "PAYMENT", "--data-dir", data)
	cmd.Env = append(os.Environ(), "DATABASE_URL=")
	if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), "batch_size=700") {
		t.Fatalf("config get: %q %v", out, err)
	}

	// SIGTERM: a clean stop.
	stopping := time.Now()
	defer func() { t.Logf("stopped in %v", time.Since(stopping).Round(time.Millisecond)) }()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM:\n%s", err, p.stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	if _, err := os.Stat(filepath.Join(data, "postgres", "data", "postmaster.pid")); !os.IsNotExist(err) {
		t.Fatalf("embedded PostgreSQL still running after SIGTERM: %v", err)
	}

	// Again, with its data.
	p = startServe(t, data, addr)
	assertMarker(t, data)

	// kill -9, then a new start works and the data is intact.
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	if err := <-p.done; err == nil {
		t.Fatal("serve exited cleanly after SIGKILL")
	}
	p.done <- nil
	p = startServe(t, data, addr)
	assertMarker(t, data)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-p.done; err != nil {
		t.Fatalf("serve on SIGTERM: %v\n%s", err, p.stderr)
	}
	p.done <- nil
}

func assertMarker(t *testing.T, data string) {
	t.Helper()
	conn := embeddedConn(t, data)
	var n int
	if err := conn.QueryRow(context.Background(),
		`SELECT count(*) FROM dispatch_audit_log WHERE item_id = 'marker'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("marker rows = %d (%v), want 1", n, err)
	}
	conn.Close(context.Background())
}

// TestMigrateTwice: the second migrate applies nothing.
func TestMigrateTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	data := dataDir(t)
	migrate := func() string {
		cmd := exec.Command(binary(t), "migrate", "--data-dir", data)
		cmd.Env = append(os.Environ(), "DATABASE_URL=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("migrate: %v", err)
		}
		return string(out)
	}
	if first := migrate(); !strings.Contains(first, "applied 00001") {
		t.Fatalf("first migrate: %q", first)
	}
	if second := migrate(); !strings.Contains(second, "nothing applied") || strings.Contains(second, "applied 0") {
		t.Fatalf("second migrate: %q", second)
	}
	cmd := exec.Command(binary(t), "migrate", "status", "--data-dir", data)
	cmd.Env = append(os.Environ(), "DATABASE_URL=")
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "applied") || strings.Contains(string(out), "pending") {
		t.Fatalf("status: %q %v", out, err)
	}
}

// TestPaymentEndToEnd: payments posted to serve (embedded PostgreSQL and
// Temporal, the embedded rail simulator) run Phase A, wait in the queue,
// are dispatched at their time, debit their account once, reach the rail
// and end DELIVERED with their queue item COMPLETED; bad input is refused
// and stores nothing; the ledger check finds nothing.
func TestPaymentEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	// Not parallel: each runs a whole serve (PostgreSQL and Temporal).
	data, addr := dataDir(t), freeAddr(t)
	startServe(t, data, addr)
	openAccount(t, addr, "ACC-1", "acme", "10000.00")
	due := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339)
	const n = 20
	for i := range n {
		body := fmt.Sprintf(`{"paymentId":"pay-%03d","tenantId":"acme","debtorAccount":"ACC-1","amount":"125.00","currency":"EUR",
			"creditor":{"name":"Jane Doe","iban":"DE89370400440532013000","bic":"COBADEFFXXX"},
			"requestedExecutionTime":%q,"remittanceInfo":"INV-42"}`, i, due)
		resp := postRetrying(t, "http://"+addr+"/v1/payments", "application/json", body)
		if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Location") != fmt.Sprintf("/v1/payments/pay-%03d", i) {
			t.Fatalf("POST %d: %d %q", i, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	// The same payment again is accepted (nothing new starts); the same id
	// with another amount is refused, whether or not Phase A stored it yet.
	post := func(body string) int {
		resp, err := http.Post("http://"+addr+"/v1/payments", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	again := fmt.Sprintf(`{"paymentId":"pay-000","tenantId":"acme","debtorAccount":"ACC-1","amount":"125.00","currency":"EUR",
		"creditor":{"name":"Jane Doe","iban":"DE89370400440532013000","bic":"COBADEFFXXX"},"requestedExecutionTime":%q,"remittanceInfo":"INV-42"}`, due)
	if code := post(again); code != http.StatusAccepted {
		t.Fatalf("identical resubmission: %d", code)
	}
	if code := post(strings.Replace(again, `"125.00"`, `"999.00"`, 1)); code != http.StatusConflict {
		t.Fatalf("same id, other amount: %d, want 409", code)
	}
	bad := `{"paymentId":"pay-bad","tenantId":"acme","debtorAccount":"A","amount":"0","currency":"EUR","creditor":{"name":"x","iban":"DE89370400440532013000"},"requestedExecutionTime":"` + due + `"}`
	resp, err := http.Post("http://"+addr+"/v1/payments", "application/json", strings.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	var prob struct {
		Status int
		Errors []struct{ Field string }
	}
	_ = json.NewDecoder(resp.Body).Decode(&prob)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity || resp.Header.Get("Content-Type") != "application/problem+json" ||
		len(prob.Errors) != 1 || prob.Errors[0].Field != "amount" {
		t.Fatalf("bad payment: %d %+v", resp.StatusCode, prob)
	}

	deadline := time.Now().Add(90 * time.Second)
	for i := range n {
		id := fmt.Sprintf("pay-%03d", i)
		for {
			var v struct{ Status, QueueStatus string }
			resp, err := http.Get("http://" + addr + "/v1/payments/" + id)
			if err == nil {
				_ = json.NewDecoder(resp.Body).Decode(&v)
				resp.Body.Close()
			}
			if v.Status == "DELIVERED" && v.QueueStatus == "COMPLETED" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: status %q queue %q", id, v.Status, v.QueueStatus)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	conn := embeddedConn(t, data)
	var notes, early int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM payment_notifications`).Scan(&notes); err != nil || notes != 2*n {
		t.Fatalf("notifications = %d (%v), want %d", notes, err, 2*n)
	}
	// Nothing executed before its requested time.
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM payments WHERE updated_at < requested_execution_time`).Scan(&early); err != nil || early != 0 {
		t.Fatalf("%d payments executed early (%v)", early, err)
	}
	if resp, err := http.Get("http://" + addr + "/v1/payments/pay-bad"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("refused payment was stored: %v", err)
	}
	// 20 payments of 125.00 (the resubmission debited nothing).
	if got := accountBalance(t, addr, "ACC-1"); got != "7500.00" {
		t.Fatalf("ACC-1 balance %s, want 7500.00", got)
	}
	verify(t, data)

	// Pacing checked from outside, as the README's curl does.
	resp = postRetrying(t, "http://"+addr+"/admin/rate-limit/config", "application/json",
		`{"configName":"default","maxPerWindow":100,"windowSize":"PT4S"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create config: %d", resp.StatusCode)
	}
	var slot, again2 struct{ EventID, ScheduledTime, WindowStart, Status string }
	for i, dst := range []*struct{ EventID, ScheduledTime, WindowStart, Status string }{&slot, &again2} {
		resp, err := http.Post("http://"+addr+"/api/v1/slots", "application/json",
			strings.NewReader(`{"eventId":"test-1","configName":"default","requestedTime":"2025-06-01T12:00:00Z"}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.NewDecoder(resp.Body).Decode(dst); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("slot %d: %d %v", i, resp.StatusCode, err)
		}
		resp.Body.Close()
	}
	scheduled, _ := time.Parse(time.RFC3339Nano, slot.ScheduledTime)
	requested := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	if slot.Status != "NEW" || again2.Status != "EXISTING" || slot.ScheduledTime != again2.ScheduledTime ||
		slot.WindowStart != "2025-06-01T12:00:00Z" || scheduled.Before(requested) || !scheduled.Before(requested.Add(4*time.Second)) {
		t.Fatalf("slots: %+v then %+v", slot, again2)
	}
	resp = postRetrying(t, "http://"+addr+"/api/v1/slots", "application/json",
		`{"eventId":"test-2","configName":"nope","requestedTime":"2025-06-01T12:00:00Z"}`)
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("unknown config: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// TestKill9MidRun: serve is killed with SIGKILL while payments are being
// initialized, dispatched and executed; after a restart every payment still
// ends DELIVERED/COMPLETED, each was executed by exactly one workflow run,
// its account was debited once and the ledger check finds nothing.
func TestKill9MidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	// Not parallel: each runs a whole serve (PostgreSQL and Temporal).
	data, addr := dataDir(t), freeAddr(t)
	tport := freePortNumber(t)
	p := startServeOn(t, data, addr, tport)
	openAccount(t, addr, "ACC-1", "acme", "1000.00")
	// A claim cut off by the kill is recovered after the stale threshold:
	// keep it short here.
	cfg := exec.Command(binary(t), "config", "set", "PAYMENT", "stale_claim_threshold_secs=5", "--data-dir", data)
	cfg.Env = append(os.Environ(), "DATABASE_URL=")
	if out, err := cfg.CombinedOutput(); err != nil {
		t.Fatalf("config set: %v\n%s", err, out)
	}
	due := time.Now().Add(4 * time.Second).UTC().Format(time.RFC3339)
	const n = 60
	for i := range n {
		body := fmt.Sprintf(`{"paymentId":"k-%03d","tenantId":"acme","debtorAccount":"ACC-1","amount":"10.00","currency":"EUR",
			"creditor":{"name":"Jane Doe","iban":"DE89370400440532013000"},"requestedExecutionTime":%q}`, i, due)
		if resp := postRetrying(t, "http://"+addr+"/v1/payments", "application/json", body); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST %d: %d", i, resp.StatusCode)
		}
	}
	// Kill it once the first payments are executing.
	waitUntil(t, 60*time.Second, func() bool { return countStatus(addr, n, "PROCESSING")+countStatus(addr, n, "DELIVERED") > 0 })
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	if err := <-p.done; err == nil {
		t.Fatal("serve exited cleanly after SIGKILL")
	}
	p.done <- nil

	startServeOn(t, data, addr, tport)
	waitUntil(t, 120*time.Second, func() bool { return countStatus(addr, n, "DELIVERED", "COMPLETED") == n })
	if got := accountBalance(t, addr, "ACC-1"); got != "400.00" {
		t.Fatalf("ACC-1 balance %s after 60 payments of 10.00, want 400.00", got)
	}

	c, err := client.Dial(client.Options{HostPort: fmt.Sprintf("127.0.0.1:%d", tport), Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Each payment names the execution that executed it (its own
	// workflow, or its batch's); each of those ran once.
	executions := map[string]bool{}
	for i := range n {
		var v struct{ ExecutionRef string }
		resp, err := http.Get(fmt.Sprintf("http://%s/v1/payments/k-%03d", addr, i))
		if err != nil {
			t.Fatal(err)
		}
		_ = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		wf, _, ok := strings.Cut(v.ExecutionRef, "/")
		if !ok || !strings.HasPrefix(wf, "exec-") {
			t.Fatalf("k-%03d: executionRef %q", i, v.ExecutionRef)
		}
		executions[wf] = true
	}
	for id := range executions {
		runs := 0
		var token []byte
		for {
			resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
				Namespace: "default", Query: "WorkflowId = '" + id + "'", NextPageToken: token})
			if err != nil {
				t.Fatal(err)
			}
			runs += len(resp.Executions)
			if token = resp.NextPageToken; len(token) == 0 {
				break
			}
		}
		if runs != 1 {
			t.Errorf("%s ran %d times", id, runs)
		}
	}
	t.Logf("%d payments executed by %d execution workflows", n, len(executions))
	verify(t, data)
}

// openAccount opens an EUR account through the API, as a client would
// before paying from it.
func openAccount(t *testing.T, addr, id, tenant, balance string) {
	t.Helper()
	resp := postRetrying(t, "http://"+addr+"/v1/accounts", "application/json",
		fmt.Sprintf(`{"accountId":%q,"tenantId":%q,"currency":"EUR","balance":%q}`, id, tenant, balance))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("open account %s: %d", id, resp.StatusCode)
	}
}

func accountBalance(t *testing.T, addr, id string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/v1/accounts/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct{ Balance string }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET account %s: %d %v", id, resp.StatusCode, err)
	}
	return v.Balance
}

// verify runs paydispatch verify on the data directory and fails the test
// on any violation.
func verify(t *testing.T, data string) {
	t.Helper()
	cmd := exec.Command(binary(t), "verify", "--data-dir", data)
	cmd.Env = append(os.Environ(), "DATABASE_URL=")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "every invariant holds") {
		t.Fatalf("paydispatch verify: %v\n%s", err, out)
	}
}

// countStatus counts payments k-000.. whose status (and, when given, queue
// status) match.
func countStatus(addr string, n int, status string, queueStatus ...string) int {
	count := 0
	for i := range n {
		var v struct{ Status, QueueStatus string }
		resp, err := http.Get(fmt.Sprintf("http://%s/v1/payments/k-%03d", addr, i))
		if err != nil {
			continue
		}
		_ = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if v.Status == status && (len(queueStatus) == 0 || v.QueueStatus == queueStatus[0]) {
			count++
		}
	}
	return count
}

func waitUntil(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached in %v", limit)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// freePortNumber is a free port above the kernel's ephemeral range
// (32768-60999): serve binds it seconds later, after its PostgreSQL has
// started, and an ephemeral port could be handed meanwhile to one of the
// many sockets the parallel tests open.
func freePortNumber(t *testing.T) int {
	t.Helper()
	for range 200 {
		port := 61000 + rand.IntN(4500)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("no free port between 61000 and 65500")
	return 0
}

// TestBulkFile: a JSON-lines file of payments due at one instant becomes
// one chunk workflow per chunk (here 100, to keep the test short), and every
// payment reaches DELIVERED with its queue item COMPLETED; a file with bad
// lines starts nothing and reports every bad line; the same file again
// is a duplicate (409) and, allowed, starts nothing new.
func TestBulkFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	// Not parallel: each runs a whole serve (PostgreSQL and Temporal).
	data, addr := dataDir(t), freeAddr(t)
	startServeOn(t, data, addr, 0, "--bulk-chunk-size", "100")
	for i := range 3 {
		openAccount(t, addr, fmt.Sprintf("ACC-t%d", i), fmt.Sprintf("t%d", i), "1000.00")
	}
	due := time.Now().Add(5 * time.Second).UTC().Format(time.RFC3339)
	const n = 250
	var file strings.Builder
	for i := range n {
		fmt.Fprintf(&file, `{"paymentId":"b-%04d","tenantId":"t%d","debtorAccount":"ACC-t%d","amount":"1.%02d","currency":"EUR","creditor":{"name":"Jane Doe","iban":"DE89370400440532013000"},"requestedExecutionTime":%q}`+"\n", i, i%3, i%3, i%100, due)
	}
	post := func(body string, query ...string) (int, map[string]any) {
		resp, err := http.Post("http://"+addr+"/v1/payment-batches?atomic=true"+strings.Join(query, ""), "application/x-ndjson", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	badFile := strings.Replace(file.String(), `"amount":"1.07"`, `"amount":"-1"`, 1) + "{not json}\n"
	if code, out := post(badFile); code != http.StatusUnprocessableEntity || len(out["errors"].([]any)) != 2 {
		t.Fatalf("bad file: %d %v", code, out)
	}
	code, out := post(file.String())
	if code != http.StatusAccepted || out["chunks"].(float64) != 3 || out["payments"].(float64) != n {
		t.Fatalf("file: %d %v", code, out)
	}
	if code, again := post(file.String()); code != http.StatusConflict || !strings.Contains(fmt.Sprint(again["detail"]), out["batchId"].(string)) {
		t.Fatalf("same file again: %d %v; want 409 naming %v", code, again, out["batchId"])
	}
	if code, again := post(file.String(), "&allowDuplicate=true"); code != http.StatusAccepted || again["batchId"] != out["batchId"] {
		t.Fatalf("same file again, allowed: %d %v", code, again)
	}
	conn := embeddedConn(t, data)
	waitUntil(t, 6*time.Minute, func() bool {
		var done int
		_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM payments p JOIN exec_queue q ON q.item_id = p.payment_id
			WHERE p.status = 'DELIVERED' AND q.queue_status = 'COMPLETED'`).Scan(&done)
		return done == n
	})
	verify(t, data)
	var total int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM payments`).Scan(&total); err != nil || total != n {
		t.Fatalf("payments stored = %d (%v), want %d (the bad file stored nothing)", total, err, n)
	}
}

// postRetrying posts as a client of the API should: a 503 means "retry
// with the same request", which is safe since payment ids make it
// idempotent.
func postRetrying(t *testing.T, url, contentType, body string) *http.Response {
	t.Helper()
	for attempt := 0; ; attempt++ {
		resp, err := http.Post(url, contentType, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || attempt == 10 {
			return resp
		}
		time.Sleep(time.Second)
	}
}
