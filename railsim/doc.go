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
//     latency (paydispatch bench outbox). Every key's arrival, accepted or
//     refused, is in its rail's ledger (GET /ledger?instructions=true).
//
// # Rails
//
// One simulator plays several rails: DEFAULT at the root (/v1/...), any
// other under /rails/{name} (/rails/SEPA/v1/instructions, ...), made by
// its first send (at most MaxRails). A rail client keeps its base URL's
// path, so a rail configured with endpoint http://127.0.0.1:9090/rails/SEPA
// speaks to the simulator's SEPA. Each rail has its own ledger (keys,
// participants, counters; references prefixed SIM-{name}-) and may have a
// cut-off: a time of day in a zone (Options.Cutoffs, --cutoffs, PUT
// /admin/rails/{name}). An instruction that arrives at or after the
// cut-off of its value date (the JSON valueDate, the pacs.008
// IntrBkSttlmDt, read as package calendar reads a rail's clock) is
// refused TM01 ("received after the cut-off time", terminal to package
// rail's taxonomy), recorded as any refusal is and counted in Late. The
// behaviour is the simulator's, shared by every rail.
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
//	... /rails/{name}/v1/...                  the same, for rail {name} (DEFAULT: the above)
//	GET  /admin/behaviour, PUT /admin/behaviour
//	GET  /admin/rails                         every rail's settings: [{"name","cutoff","timeZone"}]
//	PUT  /admin/rails/{name}                  {"cutoff":"16:00:00","timeZone":"Europe/Berlin"}
//	                                          ("cutoff":"" none; no zone: UTC); 400 problem+json
//	POST /admin/refusals/{key}/lift           204, or 404 when the key was not refused
//	POST /admin/rails/{name}/refusals/{key}/lift
//	GET  /ledger                              LedgerView as JSON: DEFAULT's counters, every
//	                                          rail's in "rails"; ?instructions=true adds each
//	                                          rail's keys with their arrival and answer
//	GET  /rails/{name}/ledger                 one rail's LedgerView (?instructions=true too)
//	POST /ledger/reset                        forget every rail's instructions
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
