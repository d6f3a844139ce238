// Package auth is who may call the HTTP API: bearer tokens with scopes and,
// optionally, a tenant. A token is shown once, when it is created; the
// database keeps its SHA-256 only, and a request is authenticated by
// looking that hash up (a token is 256 random bits, so a fast hash is
// as good as a slow one, and the lookup is one index probe). Revocation
// and expiry are read on every request, so they take effect at once.
//
// Scopes: payments:write, payments:read, payments:approve, accounts:write,
// webhooks:write, admin; admin implies every other and is never bound to a tenant (admin
// endpoints are global, but for a tenant's webhooks). A tenant-bound principal sees only its tenant's resources.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paydispatch/paydispatch/auth/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
)

// Scope is a permission a token carries.
type Scope string

// The scopes.
const (
	PaymentsWrite Scope = "payments:write"
	PaymentsRead  Scope = "payments:read"
	// PaymentsApprove approves and denies payments awaiting approval
	// (never one its token submitted).
	PaymentsApprove Scope = "payments:approve"
	AccountsWrite   Scope = "accounts:write"
	// WebhooksWrite manages the tenant's webhook endpoints.
	WebhooksWrite Scope = "webhooks:write"
	Admin         Scope = "admin"
)

// Scopes lists every scope, in the order they are documented.
var Scopes = []Scope{PaymentsWrite, PaymentsRead, PaymentsApprove, AccountsWrite, WebhooksWrite, Admin}

// ParseScopes reads a comma-separated list of scopes ("payments:write,payments:read").
func ParseScopes(s string) ([]Scope, error) {
	var out []Scope
	for _, part := range strings.Split(s, ",") {
		sc := Scope(strings.TrimSpace(part))
		if sc == "" {
			continue
		}
		if !slices.Contains(Scopes, sc) {
			return nil, fmt.Errorf("unknown scope %q: want %s", plaintext.Clip(string(sc), 32), scopeList())
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scope: want one or more of %s, comma-separated", scopeList())
	}
	return out, nil
}

func scopeList() string {
	names := make([]string, len(Scopes))
	for i, s := range Scopes {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// Principal is who a request comes from.
type Principal struct {
	TokenID  string
	Name     string
	Scopes   []Scope
	TenantID string // "" for every tenant
}

// Has reports whether the principal may act with scope s (admin may do
// everything).
func (p Principal) Has(s Scope) bool {
	return slices.Contains(p.Scopes, s) || slices.Contains(p.Scopes, Admin)
}

// Sees reports whether the principal may see a resource of tenant t.
func (p Principal) Sees(tenant string) bool { return p.TenantID == "" || p.TenantID == tenant }

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal ctx carries; ok is false when the
// request was not authenticated (authentication off).
func FromContext(ctx context.Context) (p Principal, ok bool) {
	p, ok = ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Token is a stored token (never its secret).
type Token struct {
	ID        string     `json:"tokenId"`
	Name      string     `json:"name"`
	Scopes    []Scope    `json:"scopes"`
	TenantID  string     `json:"tenantId,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
}

// Status is "active", "expired" or "revoked" at now.
func (t Token) Status(now time.Time) string {
	switch {
	case t.RevokedAt != nil:
		return "revoked"
	case t.ExpiresAt != nil && !now.Before(*t.ExpiresAt):
		return "expired"
	}
	return "active"
}

// NewToken describes a token to create.
type NewToken struct {
	Name     string
	Scopes   []Scope
	TenantID string
	// ExpiresIn > 0 makes the token stop working that long after its
	// creation; 0: it does not expire.
	ExpiresIn time.Duration
}

// Errors.
var (
	// ErrUnauthenticated: no such token, or revoked, or expired.
	ErrUnauthenticated = errors.New("auth: token unknown, revoked or expired")
	// ErrNotFound: no token with this id.
	ErrNotFound = errors.New("auth: no such token")
	// ErrInvalid: a NewToken the store refuses; the message says why.
	ErrInvalid = errors.New("auth: invalid token")
)

// DBTX is what the store needs of a pool or a transaction.
type DBTX interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}

// Store keeps the tokens in PostgreSQL.
type Store struct {
	db  DBTX
	now func() time.Time
}

// NewStore returns a store on db.
func NewStore(db DBTX) *Store { return &Store{db: db, now: time.Now} }

// maxName bounds a token's name and a bootstrap secret's length.
const maxName = 128

// Validate reports what is wrong with n, naming the field.
func (n NewToken) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	if len(n.Scopes) == 0 {
		return bad("scopes: want one or more of %s", scopeList())
	}
	for _, s := range n.Scopes {
		if !slices.Contains(Scopes, s) {
			return bad("scopes: unknown scope %q: want %s", plaintext.Clip(string(s), 32), scopeList())
		}
	}
	if n.TenantID != "" && slices.Contains(n.Scopes, Admin) {
		return bad("scopes: admin is for every tenant; a token bound to tenant %q cannot have it", plaintext.Clip(n.TenantID, 64))
	}
	// A tenant's id follows the payments' rule: a token bound to an id
	// no payment can have would have every payment refused.
	if n.TenantID != "" && !field.ValidID(n.TenantID) {
		return bad("tenant: %s", field.IDRule)
	}
	if !printable(n.Name, maxName) && n.Name != "" {
		return bad("name: at most %d printable characters", maxName)
	}
	if n.ExpiresIn < 0 {
		return bad("expires-in: want a positive duration such as 720h, or none for a token that does not expire")
	}
	return nil
}

// Create creates a token and returns its secret — shown this once — and
// the stored token.
func (s *Store) Create(ctx context.Context, n NewToken) (secret string, t Token, err error) {
	if err := n.Validate(); err != nil {
		return "", Token{}, err
	}
	secret, err = NewSecret()
	if err != nil {
		return "", Token{}, err
	}
	t, err = s.insert(ctx, s.db, n, secret)
	return secret, t, err
}

func (s *Store) insert(ctx context.Context, db DBTX, n NewToken, secret string) (Token, error) {
	id, err := newID()
	if err != nil {
		return Token{}, err
	}
	var expires *time.Time
	if n.ExpiresIn > 0 {
		at := s.now().Add(n.ExpiresIn)
		expires = &at
	}
	scopes := make([]string, len(n.Scopes))
	for i, sc := range n.Scopes {
		scopes[i] = string(sc)
	}
	var tenant *string
	if n.TenantID != "" {
		tenant = &n.TenantID
	}
	row, err := dbsqlc.New(db).InsertToken(ctx, dbsqlc.InsertTokenParams{
		TokenID: id, Name: n.Name, SecretHash: hash(secret), Scopes: scopes, TenantID: tenant, ExpiresAt: expires,
	})
	if err != nil {
		return Token{}, fmt.Errorf("auth: create token: %w", err)
	}
	return fromRow(row), nil
}

// Authenticate returns the principal of a bearer token, or
// ErrUnauthenticated.
func (s *Store) Authenticate(ctx context.Context, secret string) (Principal, error) {
	if secret == "" || len(secret) > 512 {
		return Principal{}, ErrUnauthenticated
	}
	h := hash(secret)
	row, err := dbsqlc.New(s.db).TokenByHash(ctx, h)
	if errors.Is(err, pgx.ErrNoRows) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, fmt.Errorf("auth: look the token up: %w", err)
	}
	t := fromRow(row)
	if subtle.ConstantTimeCompare(row.SecretHash, h) != 1 || t.Status(s.now()) != "active" {
		return Principal{}, ErrUnauthenticated
	}
	return Principal{TokenID: t.ID, Name: t.Name, Scopes: t.Scopes, TenantID: t.TenantID}, nil
}

// List returns every token, oldest first.
func (s *Store) List(ctx context.Context) ([]Token, error) {
	rows, err := dbsqlc.New(s.db).ListTokens(ctx)
	if err != nil {
		return nil, fmt.Errorf("auth: list tokens: %w", err)
	}
	out := make([]Token, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r)
	}
	return out, nil
}

// Revoke stops a token from working, at once. Revoking a revoked token
// changes nothing; an unknown id is ErrNotFound.
func (s *Store) Revoke(ctx context.Context, id string) error {
	q := dbsqlc.New(s.db)
	n, err := q.RevokeToken(ctx, id)
	if err != nil {
		return fmt.Errorf("auth: revoke %s: %w", plaintext.Clip(id, 64), err)
	}
	if n == 0 {
		exists, err := q.TokenExists(ctx, id)
		if err != nil {
			return fmt.Errorf("auth: revoke %s: %w", plaintext.Clip(id, 64), err)
		}
		if !exists {
			return ErrNotFound
		}
	}
	return nil
}

// BeginTxer starts transactions (a pool).
type BeginTxer interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Bootstrap makes the first admin token of a new database: given (an
// operator's secret, at least 32 characters) or, when given is empty, a
// generated one. It does nothing when any token exists. created says
// whether it made one; secret is the token when it generated it.
func Bootstrap(ctx context.Context, db BeginTxer, given string) (secret string, created bool, err error) {
	if given != "" && (len(given) < 32 || len(given) > 512 || !printable(given, 512) || strings.ContainsRune(given, ' ')) {
		return "", false, fmt.Errorf("%w: PAYDISPATCH_BOOTSTRAP_TOKEN: 32 to 512 printable characters without spaces", ErrInvalid)
	}
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		if err := q.LockBootstrap(ctx); err != nil {
			return err
		}
		any, err := q.AnyToken(ctx)
		if err != nil || any {
			return err
		}
		secret = given
		if secret == "" {
			if secret, err = NewSecret(); err != nil {
				return err
			}
		}
		s := NewStore(tx)
		if _, err := s.insert(ctx, tx, NewToken{Name: "bootstrap admin", Scopes: []Scope{Admin}}, secret); err != nil {
			return err
		}
		created = true
		return nil
	})
	if err != nil {
		return "", false, fmt.Errorf("auth: bootstrap: %w", err)
	}
	if given != "" {
		secret = ""
	}
	return secret, created, nil
}

func fromRow(r dbsqlc.ApiToken) Token {
	t := Token{ID: r.TokenID, Name: r.Name, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, RevokedAt: r.RevokedAt}
	for _, s := range r.Scopes {
		t.Scopes = append(t.Scopes, Scope(s))
	}
	if r.TenantID != nil {
		t.TenantID = *r.TenantID
	}
	return t
}

func hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// NewSecret is a new token secret: "pd_" and 256 random bits, base64url
// (a bootstrap token an operator hands to serve is one such).
func NewSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("auth: random: %w", err)
	}
	return "pd_" + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// newID is a token's public id, for listing and revoking.
func newID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("auth: random: %w", err)
	}
	return "tok_" + hex.EncodeToString(b[:]), nil
}

func printable(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, c := range s {
		if !unicode.IsPrint(c) || c == unicode.ReplacementChar {
			return false
		}
	}
	return true
}
