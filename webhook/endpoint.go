package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/net/idna"

	"github.com/paydispatch/paydispatch/internal/field"
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

// invalid is a *field.Invalid naming the field a registration got wrong
// and why.
func invalid(name, detail string) error {
	return &field.Invalid{What: "webhook", Fields: []field.Error{{Field: name, Detail: detail}}}
}

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
// (or http when allowed), a host, a port from 1 to 65535 if any, no
// credentials or fragment. A host that a resolver reads as an address
// (an IP literal, or a numbers-and-dots form glibc's inet_aton takes:
// 0177.0.0.1, 0x7f000001, 2130706433, 127.1) must be one written as an
// address is, and public unless allowed; so must the IPv4 address that
// an IPv6 one carries (NAT64 64:ff9b::/96, 6to4 2002::/16, IPv4-mapped).
// localhost names are loopback's. Any other name is checked again when
// each delivery connects, on the address it resolves to.
func (p Policy) CheckURL(raw string) error {
	bad := func(detail string) error { return invalid("url", detail) }
	if raw == "" || len(raw) > maxURL {
		return bad(fmt.Sprintf("required, at most %d characters", maxURL))
	}
	u, err := url.Parse(raw)
	if err != nil {
		if strings.Contains(err.Error(), "invalid port") {
			return bad("the port must be a number from 1 to 65535")
		}
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
	if port := u.Port(); port != "" || strings.HasSuffix(u.Host, ":") {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return bad("the port must be a number from 1 to 65535")
		}
	}
	host := u.Hostname()
	if strings.Contains(host, "%") {
		return bad("must not name an IPv6 zone")
	}
	// The host as the HTTP client dials it: an internationalized name
	// mapped to ASCII (UTS #46: fullwidth digits and ideographic full
	// stops become ASCII ones, so １２７。０。０。１ is 127.0.0.1).
	if strings.ContainsFunc(host, func(r rune) bool { return r > unicode.MaxASCII }) {
		if host, err = idna.Lookup.ToASCII(host); err != nil {
			return bad(fmt.Sprintf("host %q is not a valid host name", u.Hostname()))
		}
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	ip, err := netip.ParseAddr(host)
	if err != nil {
		var ok bool
		if ip, ok = inetAton(host); ok {
			// Go's resolver would look such a name up in DNS, glibc's
			// would not: which address it reaches depends on the resolver.
			return bad(fmt.Sprintf("a resolver reads host %q as the address %s: write an address as one (a.b.c.d)", u.Hostname(), ip))
		}
		if numericLabel(host[strings.LastIndexByte(host, '.')+1:]) {
			return bad(fmt.Sprintf("host %q is neither an address nor a host name (its last label is a number)", u.Hostname()))
		}
		if !p.AllowPrivate && (host == "localhost" || strings.HasSuffix(host, ".localhost")) {
			return bad("must be a public address: " + u.Hostname() + " is this machine (loopback)")
		}
		return nil
	}
	if !p.AllowPrivate && !public(ip) {
		return bad("must be a public address: " + u.Hostname() + " is not")
	}
	return nil
}

// inetAton reads s as glibc's inet_aton does, which getaddrinfo tries
// before any lookup: one to four numbers separated by dots, each decimal,
// octal (a leading 0) or hexadecimal (0x), the last filling the bytes
// left (127.1 is 127.0.0.1; 2130706433 is too).
func inetAton(s string) (netip.Addr, bool) {
	var parts []uint64
	for {
		n, rest, ok := cNumber(s)
		if !ok {
			return netip.Addr{}, false
		}
		parts, s = append(parts, n), rest
		if s == "" {
			break
		}
		if s[0] != '.' || len(parts) == 4 || n > 0xff {
			return netip.Addr{}, false
		}
		s = s[1:]
	}
	last := parts[len(parts)-1]
	if last > 0xffffffff>>(8*(len(parts)-1)) {
		return netip.Addr{}, false
	}
	v := uint32(last)
	for i, b := range parts[:len(parts)-1] {
		v |= uint32(b) << (24 - 8*i)
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// cNumber reads the number at the start of s as C's strtoul with base 0
// does (0x: hexadecimal, 0: octal, else decimal), at most 0xffffffff, and
// returns what follows it. It must start with a digit.
func cNumber(s string) (n uint64, rest string, ok bool) {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, s, false
	}
	base, i := uint64(10), 0
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && hexDigit(s[2]) >= 0:
		base, i = 16, 2
	case s[0] == '0':
		base = 8
	}
	for ; i < len(s); i++ {
		d := hexDigit(s[i])
		if d < 0 || uint64(d) >= base {
			break
		}
		if n = n*base + uint64(d); n > 0xffffffff {
			return 0, s, false
		}
	}
	return n, s[i:], true
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// numericLabel: a label of digits, or 0x and hex digits. No top-level
// domain is one, and resolvers differ on what to make of a host ending
// in one (1.2.3.4.5, 0x1.0x2): it is refused rather than guessed at.
func numericLabel(l string) bool {
	if h, ok := strings.CutPrefix(l, "0x"); ok {
		l = h
		return l == "" || strings.IndexFunc(l, func(r rune) bool { return r > 0x7f || hexDigit(byte(r)) < 0 }) < 0
	}
	return l != "" && strings.IndexFunc(l, func(r rune) bool { return r < '0' || r > '9' }) < 0
}

// public reports whether an address is on the public internet. An IPv6
// address that carries an IPv4 one (IPv4-mapped, NAT64's well-known
// prefix, 6to4) is as public as that; any other IPv6 address must be
// global unicast (2000::/3) outside the ranges reserved in it.
func public(ip netip.Addr) bool {
	if !ip.IsValid() || ip.Zone() != "" {
		return false
	}
	ip = ip.Unmap()
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip):
			return public(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(ip):
			return public(netip.AddrFrom4([4]byte(b[2:6])))
		case !globalUnicast.Contains(ip):
			return false
		}
		for _, p := range nonPublic6 {
			if p.Contains(ip) {
				return false
			}
		}
		return true
	}
	switch {
	case ip.IsLoopback(), ip.IsPrivate(), ip.IsUnspecified(), ip.IsLinkLocalUnicast(),
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

// nonPublic are the IPv4 ranges net/netip does not classify: "this
// network", carrier-grade NAT, IETF protocol assignments, the
// documentation networks, the 6to4 relay anycast, benchmarking, and the
// reserved block (broadcast included).
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("192.88.99.0/24"), netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("240.0.0.0/4"),
}

var (
	nat64         = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour     = netip.MustParsePrefix("2002::/16")
	globalUnicast = netip.MustParsePrefix("2000::/3")
	// nonPublic6 are the reserved ranges in global unicast: IETF protocol
	// assignments (Teredo, benchmarking, ORCHID among them) and the
	// documentation prefixes.
	nonPublic6 = []netip.Prefix{netip.MustParsePrefix("2001::/23"), netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("3fff::/20")}
)

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

// StoreConfig configures a Store.
type StoreConfig struct {
	// DB holds the endpoints and their deliveries (required).
	DB DB
	// Policy is where Register lets an endpoint point (zero: HTTPS to a
	// public address only).
	Policy Policy
}

// Store manages endpoints and their deliveries. A value: the Tx methods
// use a copy on the caller's transaction.
type Store struct {
	db     DB
	policy Policy
}

// NewStore returns the store cfg configures. Nothing in cfg can be
// invalid: a missing DB fails at the first call.
func NewStore(cfg StoreConfig) Store { return Store{db: cfg.DB, policy: cfg.Policy} }

// CheckURL checks a URL against the store's policy.
func (s Store) CheckURL(raw string) error { return s.policy.CheckURL(raw) }

// MaxEndpoints bounds a tenant's endpoints: each status change writes a
// delivery per endpoint, in the transaction that makes it.
const MaxEndpoints = 16

// Register stores a tenant's endpoint and returns it with its signing
// secret, which is shown this once.
func (s Store) Register(ctx context.Context, n NewEndpoint) (Endpoint, string, error) {
	db, p := s.db, s.policy
	if n.TenantID == "" {
		return Endpoint{}, "", invalid("tenantId", "required")
	}
	if err := p.CheckURL(n.URL); err != nil {
		return Endpoint{}, "", err
	}
	if len(n.Description) > 500 {
		return Endpoint{}, "", invalid("description", "at most 500 characters")
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
			return invalid("tenantId", fmt.Sprintf("a tenant has at most %d endpoints: delete one first", MaxEndpoints))
		}
		e, err = q.InsertEndpoint(ctx, dbsqlc.InsertEndpointParams{EndpointID: uuid.Must(uuid.NewV7()), TenantID: n.TenantID,
			Url: n.URL, EventTypes: types, Description: n.Description, Secret: secret})
		return err
	})
	var bad *field.Invalid
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
	db := s.db
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
	db := s.db
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
	db := s.db
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
	db := s.db
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
