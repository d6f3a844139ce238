package auth_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/auth"
	authmig "github.com/paydispatch/paydispatch/auth/migrations"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/postgres"
)

func TestMain(m *testing.M) {
	pgtest.Main(m, postgres.Schema{Migrations: []fs.FS{authmig.FS}})
}

func TestParseScopes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    []auth.Scope
		wantErr string
	}{
		{"payments:write", []auth.Scope{auth.PaymentsWrite}, ""},
		{"payments:write, payments:read,payments:write", []auth.Scope{auth.PaymentsWrite, auth.PaymentsRead}, ""},
		{"admin", []auth.Scope{auth.Admin}, ""},
		{"payments:approve,payments:read", []auth.Scope{auth.PaymentsApprove, auth.PaymentsRead}, ""},
		{"", nil, "no scope"},
		{" , ", nil, "no scope"},
		{"payments:delete", nil, `unknown scope "payments:delete"`},
		{"ADMIN", nil, `unknown scope "ADMIN"`},
	}
	for _, tt := range tests {
		got, err := auth.ParseScopes(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseScopes(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(scopeNames(got), ",") != strings.Join(scopeNames(tt.want), ",") {
			t.Errorf("ParseScopes(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func scopeNames(ss []auth.Scope) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

func TestPrincipal(t *testing.T) {
	t.Parallel()
	admin := auth.Principal{Scopes: []auth.Scope{auth.Admin}}
	reader := auth.Principal{Scopes: []auth.Scope{auth.PaymentsRead}, TenantID: "acme"}
	for _, s := range auth.Scopes {
		if !admin.Has(s) {
			t.Errorf("admin lacks %s", s)
		}
	}
	if !reader.Has(auth.PaymentsRead) || reader.Has(auth.PaymentsWrite) || reader.Has(auth.Admin) {
		t.Errorf("reader's scopes: %+v", reader)
	}
	if !admin.Sees("acme") || !reader.Sees("acme") || reader.Sees("globex") || reader.Sees("") {
		t.Error("tenant visibility is wrong")
	}
}

// TestTokenLifecycle: a created token authenticates with its scopes and
// tenant; revocation and expiry take effect at once; a wrong or unknown
// token never authenticates; refused specs store nothing.
func TestTokenLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := auth.NewStore(pgtest.NewPool(t))

	secret, tok, err := s.Create(ctx, auth.NewToken{Name: "erp", Scopes: []auth.Scope{auth.PaymentsWrite}, TenantID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "pd_") || len(secret) != 46 || !strings.HasPrefix(tok.ID, "tok_") {
		t.Fatalf("secret %q, id %q", secret, tok.ID)
	}
	p, err := s.Authenticate(ctx, secret)
	if err != nil || p.TokenID != tok.ID || p.TenantID != "acme" || !p.Has(auth.PaymentsWrite) || p.Has(auth.PaymentsRead) {
		t.Fatalf("authenticate: %+v, %v", p, err)
	}
	for _, bad := range []string{"", secret + "x", secret[:len(secret)-1], strings.ToUpper(secret), strings.Repeat("a", 600)} {
		if _, err := s.Authenticate(ctx, bad); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Errorf("authenticate %q: %v", bad, err)
		}
	}

	if err := s.Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, secret); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("a revoked token authenticated: %v", err)
	}
	if err := s.Revoke(ctx, tok.ID); err != nil {
		t.Fatalf("revoking twice: %v", err)
	}
	if err := s.Revoke(ctx, "tok_none"); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("revoking an unknown token: %v", err)
	}

	short, _, err := s.Create(ctx, auth.NewToken{Scopes: []auth.Scope{auth.PaymentsRead}, ExpiresIn: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, short); err != nil {
		t.Fatalf("before expiry: %v", err)
	}
	time.Sleep(400 * time.Millisecond)
	if _, err := s.Authenticate(ctx, short); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("an expired token authenticated: %v", err)
	}

	for _, n := range []auth.NewToken{
		{},
		{Scopes: []auth.Scope{"root"}},
		{Scopes: []auth.Scope{auth.Admin}, TenantID: "acme"},
		{Scopes: []auth.Scope{auth.PaymentsRead}, TenantID: "ac\x00me"},
		{Scopes: []auth.Scope{auth.PaymentsRead}, TenantID: "<img src=x onerror=alert(1)>"},
		{Scopes: []auth.Scope{auth.PaymentsRead}, TenantID: "acme corp"},
		{Scopes: []auth.Scope{auth.PaymentsRead}, TenantID: strings.Repeat("t", 65)},
		{Scopes: []auth.Scope{auth.PaymentsRead}, Name: strings.Repeat("n", 200)},
		{Scopes: []auth.Scope{auth.PaymentsRead}, ExpiresIn: -time.Hour},
	} {
		if _, _, err := s.Create(ctx, n); !errors.Is(err, auth.ErrInvalid) {
			t.Errorf("created %+v: %v", n, err)
		}
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %d tokens, %v; want the 2 created", len(list), err)
	}
	now := time.Now()
	if list[0].Status(now) != "revoked" || list[1].Status(now) != "expired" {
		t.Fatalf("statuses %s, %s", list[0].Status(now), list[1].Status(now))
	}
}

// TestEveryScopeIsStored: a token holds each scope the API knows, so the
// database's check of known scopes keeps up with auth.Scopes.
func TestEveryScopeIsStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := auth.NewStore(pgtest.NewPool(t))
	for _, scope := range auth.Scopes {
		tenant := "acme"
		if scope == auth.Admin {
			tenant = ""
		}
		secret, _, err := s.Create(ctx, auth.NewToken{Name: string(scope), Scopes: []auth.Scope{scope}, TenantID: tenant})
		if err != nil {
			t.Fatalf("a token with %s: %v", scope, err)
		}
		if p, err := s.Authenticate(ctx, secret); err != nil || !p.Has(scope) {
			t.Fatalf("the token with %s: %+v, %v", scope, p, err)
		}
	}
	if _, _, err := s.Create(ctx, auth.NewToken{Name: "all", Scopes: auth.Scopes}); err != nil {
		t.Fatalf("a token with every scope: %v", err)
	}
}

// TestBootstrap: the first admin token is made once, by one of many
// starting servers at once; a given secret is used as it is; a database
// with tokens gets none.
func TestBootstrap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("generated, once under concurrency", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t)
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			secrets []string
		)
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				secret, created, err := auth.Bootstrap(ctx, pool, "")
				if err != nil {
					t.Error(err)
					return
				}
				if created {
					mu.Lock()
					secrets = append(secrets, secret)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(secrets) != 1 {
			t.Fatalf("%d bootstrap tokens made, want 1", len(secrets))
		}
		p, err := auth.NewStore(pool).Authenticate(ctx, secrets[0])
		if err != nil || !p.Has(auth.Admin) || p.TenantID != "" {
			t.Fatalf("bootstrap principal %+v, %v", p, err)
		}
	})
	t.Run("given", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t)
		given := "an-operators-own-secret-of-40-characters"
		secret, created, err := auth.Bootstrap(ctx, pool, given)
		if err != nil || !created || secret != "" {
			t.Fatalf("bootstrap: %q, %t, %v", secret, created, err)
		}
		if _, err := auth.NewStore(pool).Authenticate(ctx, given); err != nil {
			t.Fatal(err)
		}
		if _, created, err := auth.Bootstrap(ctx, pool, "another-secret-that-is-long-enough-xx"); err != nil || created {
			t.Fatalf("second bootstrap: %t, %v", created, err)
		}
	})
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t)
		for _, given := range []string{"short", "has spaces in it and is long enough to pass", strings.Repeat("x", 600)} {
			if _, _, err := auth.Bootstrap(ctx, pool, given); !errors.Is(err, auth.ErrInvalid) {
				t.Errorf("bootstrap %q: %v", given, err)
			}
		}
		if list, err := auth.NewStore(pool).List(ctx); err != nil || len(list) != 0 {
			t.Fatalf("stored %d tokens, %v", len(list), err)
		}
	})
}
