// Package railsim is a payment rail in a box: an in-memory server that
// speaks the rail HTTP API of package rail (JSON and pacs.008 sends,
// status inquiry by idempotency key), so the outbox's relayer can be
// tested, benchmarked and demonstrated without a bank. serve runs one
// in-process when no rail is configured.
//
// It behaves like a real rail where the relayer's correctness depends on
// it:
//
//   - Idempotent by key: a key sent again gets the original answer (the
//     same reference, or the same refusal), and the resend of an accepted
//     key is counted as a duplicate. A correct relayer never resends what
//     the rail accepted, so Duplicates is 0 after a good run, whatever the
//     chaos.
//   - Strict: a pacs.008 that rail.ParsePacs008 refuses, a JSON body that
//     rail.DecodeJSONRequest or rail.CheckInstruction refuses, or a body
//     whose sequence differs from the headers is refused with FF01
//     (terminal). Missing or bad headers are refused without recording.
//   - Sequencing is observed, not enforced: per participant the ledger
//     reports gaps and reordering (LedgerView), the relayer's invariants
//     made visible.
//   - Receipt times: ReceivedAt is when the accepted send of a key arrived,
//     so a producer in the same process can measure commit-to-receipt
//     latency (paydispatch bench outbox).
//
// # Behaviour
//
// Behaviour (Options, SetBehaviour, GET/PUT /admin/behaviour) makes the
// rail slow or unreliable for a stretch: latency and jitter, a fraction of
// sends answered retryable (503 RAIL_BUSY by default; nothing recorded), a
// fraction of instructions refused terminally (AC04 by default; decided
// per idempotency key from the seed, so a refused key stays refused on
// resend and inquiry), and a fraction of accepted sends recorded and then
// answered too late or not at all (the connection closed): the UNKNOWN
// outcomes the relayer must settle by inquiry. Retryable and timeout
// decisions are drawn per attempt from a generator seeded by Seed. A PUT
// changes only the fields its JSON names. Independently of the
// behaviour, an instruction whose remittance information contains
// RAIL-REJECT:<CODE> is refused with CODE, so a demo can plant refusals.
// An operator lifts a refusal (POST /admin/refusals/{key}/lift, as when a
// closed account is reopened): the key's next send is accepted, counted
// once, its sequence not counted again.
//
// # Endpoints
//
//	POST /v1/instructions, POST /v1/pacs008   sends (package rail documents them)
//	GET  /v1/instructions/{key}               inquiry: 200 ACCEPTED/REJECTED, 404 NOT_FOUND
//	GET  /admin/behaviour, PUT /admin/behaviour
//	POST /admin/refusals/{key}/lift           204, or 404 when the key was not refused
//	GET  /ledger                              LedgerView as JSON
//	POST /ledger/reset                        forget everything
//	GET  /healthz
//
// The admin and ledger endpoints answer only requests addressed to a
// loopback name (127.0.0.1, localhost, [::1]); on a loopback listener
// every endpoint does (Start). The simulator has no tokens: it is for
// tests, demos and staging, not for production.
// Everything is in memory behind one mutex per concern; a send costs the
// ledger a few map operations (BenchmarkHandlerSend,
// BenchmarkLoopbackJSONRail).
package railsim
