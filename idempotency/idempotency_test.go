package idempotency_test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/idempotency"
	idemmig "github.com/paydispatch/paydispatch/idempotency/migrations"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/service"
	"github.com/paydispatch/paydispatch/postgres"
)

func TestMain(m *testing.M) {
	pgtest.Main(m, postgres.Schema{Migrations: []fs.FS{idemmig.FS}})
}

// countingLedger creates accounts in memory and counts the creations.
type countingLedger struct {
	mu      sync.Mutex
	created atomic.Int64
	slow    time.Duration
	seen    map[string]bool
}

func (c *countingLedger) CreateAccount(_ context.Context, n service.NewAccount) (service.AccountView, bool, error) {
	time.Sleep(c.slow)
	if n.AccountID == "broken" {
		c.created.Add(100) // counted, to see that a retry ran it again
		return service.AccountView{}, false, errors.New("connection refused")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	created := !c.seen[n.AccountID]
	if created {
		c.seen[n.AccountID] = true
		c.created.Add(1)
	}
	return service.AccountView{}, created, nil
}

func (c *countingLedger) Account(context.Context, string, string) (service.AccountView, error) {
	return service.AccountView{}, nil
}

func newAPI(t *testing.T, slow time.Duration) (http.Handler, *countingLedger, *idempotency.Store) {
	t.Helper()
	store := idempotency.NewStore(pgtest.NewPool(t), idempotency.Config{})
	led := &countingLedger{slow: slow, seen: map[string]bool{}}
	rt, err := httpapi.NewRouter(httpapi.RouterConfig{IdempotencyKeys: store, Services: httpapi.Services{Accounts: led}})
	if err != nil {
		t.Fatal(err)
	}
	return rt, led, store
}

func post(h http.Handler, key, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "/v1/accounts", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "-" {
		req.Header.Set("Idempotency-Key", key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

const account = `{"accountId":"ACC-1","tenantId":"acme","currency":"EUR","balance":"10.00"}`

// TestIdempotencyKey: the same key and body replay the first answer
// (status and body, marked replayed); another body is 422; another key
// runs the request; a malformed key is 400; a refusal is replayed too.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	api, led, _ := newAPI(t, 0)

	first := post(api, "k-1", account)
	if first.Code != http.StatusCreated || first.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %v", first.Code, first.Header())
	}
	again := post(api, "k-1", account)
	if again.Code != first.Code || again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" ||
		again.Header().Get("Location") != first.Header().Get("Location") {
		t.Fatalf("replay: %d %q %v; first %d %q", again.Code, again.Body, again.Header(), first.Code, first.Body)
	}
	if other := post(api, "k-1", strings.Replace(account, "10.00", "11.00", 1)); other.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(other.Body.String(), "different body") {
		t.Fatalf("same key, other body: %d %s", other.Code, other.Body)
	}
	if fresh := post(api, "k-2", account); fresh.Code != http.StatusOK || fresh.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("another key runs the request (the account exists: 200): %d", fresh.Code)
	}
	if n := led.created.Load(); n != 1 {
		t.Fatalf("%d accounts created, want 1", n)
	}
	for _, key := range []string{"", strings.Repeat("k", 256), "has space", "tab\tkey", "é"} {
		if rec := post(api, key, account); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "Idempotency-Key") {
			t.Errorf("key %q: %d %s", key, rec.Code, rec.Body)
		}
	}
	bad := `{"accountId":"bad id","tenantId":"acme","currency":"EUR","balance":"10.00"}`
	r1, r2 := post(api, "k-bad", bad), post(api, "k-bad", bad)
	if r1.Code != http.StatusUnprocessableEntity || r2.Code != r1.Code || r2.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("a refusal: %d, then %d %v", r1.Code, r2.Code, r2.Header())
	}
	if rec := post(api, "-", account); rec.Code != http.StatusOK {
		t.Fatalf("without a key: %d", rec.Code)
	}
	// A failure worth retrying is not recorded: the retry runs again.
	broken := strings.Replace(account, "ACC-1", "broken", 1)
	if a, b := post(api, "k-503", broken), post(api, "k-503", broken); a.Code != http.StatusServiceUnavailable ||
		b.Code != http.StatusServiceUnavailable || b.Header().Get("Idempotent-Replayed") != "" || led.created.Load() != 201 {
		t.Fatalf("503 then %d (replayed %q), runs %d", b.Code, b.Header().Get("Idempotent-Replayed"), led.created.Load())
	}
}

// TestIdempotencyKeyConcurrent: 20 goroutines send the same key and body
// at once: one runs the request, the others are told it is in flight
// (409) or get its answer replayed; the effect happens once.
func TestIdempotencyKeyConcurrent(t *testing.T) {
	t.Parallel()
	api, led, _ := newAPI(t, 200*time.Millisecond)
	var wg sync.WaitGroup
	codes := make([]int, 20)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = post(api, "same", account).Code
		}()
	}
	wg.Wait()
	var created, inFlight, other int
	for _, c := range codes {
		switch c {
		case http.StatusCreated:
			created++
		case http.StatusConflict:
			inFlight++
		default:
			other++
		}
	}
	if n := led.created.Load(); n != 1 || created < 1 || other != 0 {
		t.Fatalf("effects %d; answers: %d created (first or replayed), %d in flight, %d other (%v)", n, created, inFlight, other, codes)
	}
	if rec := post(api, "same", account); rec.Code != http.StatusCreated || rec.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("after: %d", rec.Code)
	}
}

// TestKeysExpire: keys are per principal; a key is kept for its TTL,
// expires after it (the request runs again) and the cleanup deletes it.
// Time passes by moving the keys' expiry back: a short TTL would race a
// loaded machine.
func TestKeysExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	const ttl = time.Hour
	store := idempotency.NewStore(pool, idempotency.Config{TTL: ttl})
	c, rec, err := store.Claim(ctx, "tok_a", "k", "POST", "/v1/accounts")
	if err != nil || c == nil || rec != nil {
		t.Fatalf("claim: %v %v %v", c, rec, err)
	}
	if err := store.Complete(ctx, c, []byte{1}, idempotency.Response{Status: 201, Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if c2, rec, _ := store.Claim(ctx, "tok_b", "k", "POST", "/v1/accounts"); c2 == nil || rec != nil {
		t.Fatal("another principal's same key must be its own")
	}
	if c3, rec, _ := store.Claim(ctx, "tok_a", "k", "POST", "/v1/accounts"); c3 != nil || rec == nil || rec.Response.Status != 201 {
		t.Fatalf("within the TTL: %v %+v", c3, rec)
	}
	var kept []time.Duration
	rows, err := pool.Query(ctx, `SELECT expires_at - created_at FROM idempotency_keys`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var d time.Duration
		if err := rows.Scan(&d); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, d)
	}
	if rows.Err() != nil || len(kept) != 2 {
		t.Fatalf("keys: %v, %v", kept, rows.Err())
	}
	for _, d := range kept {
		if d < ttl-time.Minute || d > ttl {
			t.Fatalf("a key is kept %v, want the TTL, %v", d, ttl)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE idempotency_keys SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if n, err := store.DeleteExpired(ctx); err != nil || n != 2 {
		t.Fatalf("cleanup deleted %d, %v; want 2", n, err)
	}
	if c4, rec, _ := store.Claim(ctx, "tok_a", "k", "POST", "/v1/accounts"); c4 == nil || rec != nil {
		t.Fatal("an expired key must be claimable again")
	}
	var left int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&left)
	if left != 1 {
		t.Fatalf("%d rows left", left)
	}
}
