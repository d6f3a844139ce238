// Package webhook tells tenants' HTTP endpoints what happened, signed: a
// webhook outbox written in the transaction that produced the event and a
// relayer that delivers it (docs/webhooks.md has the user's side).
//
// The package is a framework: it knows tenants, endpoints, subjects and
// opaque JSON events, never payments. A domain publishes with Publish in
// its own transaction, or calls webhook_publish from SQL (package payment
// does, from a trigger on its status column).
//
// # Tables (migration 00041)
//
//	webhook_endpoints   a tenant's URL, the event types it takes (none: all), its secret,
//	                    and for a while after a rotation the previous one
//	webhook_deliveries  one row per event and endpoint: PENDING → SENDING → DELIVERED | DEAD
//
// Publishing fans an event out to its tenant's endpoints when it is
// written, so an endpoint registered later does not receive what happened
// before it.
//
// # Delivery
//
// A relayer claims due deliveries in one statement (FOR UPDATE SKIP
// LOCKED: relayers side by side take disjoint rows), marking them SENDING
// with a lease, and posts each to its endpoint with the signature
// (SignatureHeader) and the event's id and type in headers. A 2xx is
// DELIVERED. Anything else — another status, a refused connection, a
// timeout — is retried after BackoffBase·2^(n−1) (at most BackoffMax,
// less up to a fifth at random; 125 ms, 250 ms, 500 ms, 1 s … by
// default), or after the answer's Retry-After when that is longer (up to
// BackoffMax), until MaxAttempts, and then DEAD: a dead letter, which
// Redrive sends again. A relayer that dies leaves its claims
// SENDING until their lease lapses, when they are due again.
//
// Delivered rows are deleted by the retention cleaner (DeleteDelivered,
// in one process at a time) after their retention, 7 days by default;
// dead letters stay until redriven.
//
// At least once: a delivery whose answer was lost, or whose relayer died,
// goes again; a receiver deduplicates on the event id.
//
// In order per subject: a delivery is not claimed while an earlier
// delivery of the same subject to the same endpoint is open (PENDING or
// SENDING). A failing delivery holds up its subject's later events to
// that endpoint, nothing else: while it waits for its retry, they wait
// with it (their next_attempt_at moved to its own, so that claims do
// not step over them meanwhile). Once dead, it no longer holds them up; a
// redriven dead letter arrives after them.
//
// Throughput: an endpoint has up to PerEndpoint (32) deliveries in
// flight, each of a different subject, so one endpoint keeps up with many
// subjects' events while each subject's go one at a time. A claim reads
// each endpoint's candidates only up to its room (PerEndpoint less those
// in flight), so an endpoint at its cap costs one count. The relayer
// records the outcomes that came in while it was busy and claims again
// in one transaction, its two statements sent as one batch (the claim
// sees what the record freed), without JIT compilation: under load, a
// round trip to the database carries many deliveries.
//
// Isolation: each endpoint has at most PerEndpoint deliveries in flight,
// and each has a timeout, so a slow or failing endpoint holds that many
// of the relayer's MaxInFlight and no more: other endpoints' deliveries,
// and the rail's outbox (its own relayer), go on. Endpoints are claimed in
// a random order, so none always comes last.
//
// Where deliveries may go is a Policy: by default https only, and only
// to public addresses, checked on the address each connection dials (a
// name that resolves to a private address later is refused too). No
// proxy from the environment, no redirects.
//
// # Signature
//
// As Stripe signs its webhooks: SignatureHeader is "t=<unix seconds>,
// v1=<hex HMAC-SHA256 of t.body>", keyed with the endpoint's secret. After
// Rotate, both secrets sign until the old one expires, so a receiver
// switches without refusing a delivery. Verify checks a header as a
// receiver would.
package webhook
