package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paydispatch/paydispatch/webhook/internal/dbsqlc"
)

// DB is what the endpoint operations need: a pool (Delete runs a
// transaction).
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Endpoint is a tenant's registered receiver. Its secret is shown once,
// when it is made (Register, Rotate), and never listed.
type Endpoint struct {
	ID          uuid.UUID `json:"id"`
	TenantID    string    `json:"tenantId"`
	URL         string    `json:"url"`
	EventTypes  []string  `json:"eventTypes"`
	Description string    `json:"description,omitempty"`
	// PreviousSecretExpiresAt: after a rotation, until when the old
	// secret also signs.
	PreviousSecretExpiresAt *time.Time `json:"previousSecretExpiresAt,omitempty"`
	CreatedAt               time.Time  `json:"createdAt"`
	UpdatedAt               time.Time  `json:"updatedAt"`
}

func endpointOf(e dbsqlc.WebhookEndpoint, now time.Time) Endpoint {
	out := Endpoint{ID: e.EndpointID, TenantID: e.TenantID, URL: e.Url, EventTypes: e.EventTypes, Description: e.Description,
		CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
	if out.EventTypes == nil {
		out.EventTypes = []string{}
	}
	if e.PreviousExpiresAt != nil && e.PreviousExpiresAt.After(now) {
		out.PreviousSecretExpiresAt = e.PreviousExpiresAt
	}
	return out
}

// NewEndpoint is a registration.
type NewEndpoint struct {
	TenantID string
	URL      string
	// EventTypes are the types sent there; none: every type. The caller
	// checks them against the types its domain publishes.
	EventTypes  []string
	Description string
}

// ErrNotFound: no such endpoint (or delivery).
var ErrNotFound = errors.New("webhook: not found")

// InvalidError names the field a registration got wrong and why.
type InvalidError struct{ Field, Detail string }

func (e *InvalidError) Error() string { return "webhook: " + e.Field + ": " + e.Detail }

// Policy is where deliveries may go. The default sends only to https
// URLs on public addresses: a tenant's URL must not reach the network
// paydispatch runs in (the database, a cloud's metadata service).
type Policy struct {
	// AllowHTTP accepts http:// URLs.
	AllowHTTP bool
	// AllowPrivate lets deliveries reach loopback, private, link-local
	// and other non-public addresses (a test's receiver, a demo).
	AllowPrivate bool
}

// maxURL bounds an endpoint's URL.
const maxURL = 2048

// CheckURL checks an endpoint's URL against the policy: absolute, https
// (or http when allowed), a host, no credentials or fragment, and, when
// the host is an address, a public one unless allowed. A name is checked
// again when each delivery connects, on the address it resolves to.
func (p Policy) CheckURL(raw string) error {
	bad := func(detail string) error { return &InvalidError{Field: "url", Detail: detail} }
	if raw == "" || len(raw) > maxURL {
		return bad(fmt.Sprintf("required, at most %d characters", maxURL))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("not a URL")
	}
	switch {
	case u.Scheme == "http" && !p.AllowHTTP, u.Scheme != "https" && u.Scheme != "http":
		if p.AllowHTTP {
			return bad("must be an http:// or https:// URL")
		}
		return bad("must be an https:// URL")
	case u.Host == "" || u.Hostname() == "":
		return bad("must name a host")
	case u.User != nil:
		return bad("must not carry credentials: the signature authenticates each delivery")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return bad("must not have a #fragment")
	}
	if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && !p.AllowPrivate && !public(ip) {
		return bad("must be a public address: " + ip.String() + " is not")
	}
	return nil
}

// public reports whether an address is on the public internet.
func public(ip netip.Addr) bool {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid(), ip.IsLoopback(), ip.IsPrivate(), ip.IsUnspecified(), ip.IsLinkLocalUnicast(),
		ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast(), ip.IsMulticast():
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// nonPublic are the ranges net/netip does not classify: "this network",
// carrier-grade NAT, IETF protocol assignments, benchmarking, and the
// reserved block.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("240.0.0.0/4"),
}

// errPrivateAddress: a delivery's host resolved to an address the policy
// forbids.
var errPrivateAddress = errors.New("the endpoint's address is not public")

// dialControl refuses connections to non-public addresses, on the
// address actually dialled (so a name that resolves to one later, DNS
// rebinding, is refused too).
func (p Policy) dialControl(_, address string) error {
	if p.AllowPrivate {
		return nil
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !public(ip) {
		return errPrivateAddress
	}
	return nil
}

// Store manages endpoints and their deliveries in DB; Policy is where
// Register lets an endpoint point.
type Store struct {
	DB     DB
	Policy Policy
}

// CheckURL checks a URL against the store's policy.
func (s Store) CheckURL(raw string) error { return s.Policy.CheckURL(raw) }

// MaxEndpoints bounds a tenant's endpoints: each status change writes a
// delivery per endpoint, in the transaction that makes it.
const MaxEndpoints = 16

// Register stores a tenant's endpoint and returns it with its signing
// secret, which is shown this once.
func (s Store) Register(ctx context.Context, n NewEndpoint) (Endpoint, string, error) {
	db, p := s.DB, s.Policy
	if n.TenantID == "" {
		return Endpoint{}, "", &InvalidError{Field: "tenantId", Detail: "required"}
	}
	if err := p.CheckURL(n.URL); err != nil {
		return Endpoint{}, "", err
	}
	if len(n.Description) > 500 {
		return Endpoint{}, "", &InvalidError{Field: "description", Detail: "at most 500 characters"}
	}
	secret := NewSecret()
	types := n.EventTypes
	if types == nil {
		types = []string{}
	}
	var e dbsqlc.WebhookEndpoint
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		if err := q.LockTenantEndpoints(ctx, n.TenantID); err != nil {
			return err
		}
		count, err := q.CountEndpoints(ctx, n.TenantID)
		if err != nil {
			return err
		}
		if count >= MaxEndpoints {
			return &InvalidError{Field: "tenantId", Detail: fmt.Sprintf("a tenant has at most %d endpoints: delete one first", MaxEndpoints)}
		}
		e, err = q.InsertEndpoint(ctx, dbsqlc.InsertEndpointParams{EndpointID: uuid.Must(uuid.NewV7()), TenantID: n.TenantID,
			Url: n.URL, EventTypes: types, Description: n.Description, Secret: secret})
		return err
	})
	var bad *InvalidError
	if errors.As(err, &bad) {
		return Endpoint{}, "", err
	}
	if err != nil {
		return Endpoint{}, "", fmt.Errorf("webhook: register an endpoint: %w", err)
	}
	return endpointOf(e, time.Now()), secret, nil
}

// Get returns an endpoint; ErrNotFound when there is none.
func (s Store) Get(ctx context.Context, id uuid.UUID) (Endpoint, error) {
	db := s.DB
	e, err := dbsqlc.New(db).GetEndpoint(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Endpoint{}, ErrNotFound
	}
	if err != nil {
		return Endpoint{}, fmt.Errorf("webhook: endpoint %s: %w", id, err)
	}
	return endpointOf(e, time.Now()), nil
}

// ListAfter is where a list of endpoints resumes: after this one.
type ListAfter struct {
	CreatedAt time.Time
	ID        uuid.UUID
}

// List returns up to limit endpoints of a tenant (every tenant's for an
// empty tenant), oldest first, after the given one (nil: from the first).
func (s Store) List(ctx context.Context, tenant string, after *ListAfter, limit int) ([]Endpoint, error) {
	db := s.DB
	arg := dbsqlc.ListEndpointsParams{TenantID: tenant, MaxRows: int32(limit)}
	if after != nil {
		arg.Started, arg.AfterCreated, arg.AfterID = true, after.CreatedAt, after.ID
	}
	rows, err := dbsqlc.New(db).ListEndpoints(ctx, arg)
	if err != nil {
		return nil, fmt.Errorf("webhook: list endpoints: %w", err)
	}
	now := time.Now()
	out := make([]Endpoint, len(rows))
	for i, e := range rows {
		out[i] = endpointOf(e, now)
	}
	return out, nil
}

// Delete removes an endpoint; its deliveries not yet made become dead
// letters ("endpoint deleted"), in the same transaction.
func (s Store) Delete(ctx context.Context, id uuid.UUID) error {
	db := s.DB
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		n, err := q.DeleteEndpoint(ctx, id)
		if err != nil {
			return fmt.Errorf("webhook: delete endpoint %s: %w", id, err)
		}
		if n == 0 {
			return ErrNotFound
		}
		if _, err := q.DropOpenDeliveries(ctx, id); err != nil {
			return fmt.Errorf("webhook: endpoint %s: settle its open deliveries: %w", id, err)
		}
		return nil
	})
}

// Rotate gives an endpoint a new secret and returns it. The old one keeps
// signing beside it (two v1 signatures) for keepOld, so that the receiver
// can switch without refusing a delivery; zero ends it at once.
func (s Store) Rotate(ctx context.Context, id uuid.UUID, keepOld time.Duration) (Endpoint, string, error) {
	db := s.DB
	secret := NewSecret()
	e, err := dbsqlc.New(db).RotateSecret(ctx, dbsqlc.RotateSecretParams{EndpointID: id, Secret: secret,
		PreviousExpiresAt: new(time.Now().Add(keepOld))})
	if errors.Is(err, pgx.ErrNoRows) {
		return Endpoint{}, "", ErrNotFound
	}
	if err != nil {
		return Endpoint{}, "", fmt.Errorf("webhook: rotate the secret of %s: %w", id, err)
	}
	return endpointOf(e, time.Now()), secret, nil
}
