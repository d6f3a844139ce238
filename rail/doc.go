// Package rail holds the rail adapters: the outbox.Senders that turn an
// outbox message into one call to a payment rail and classify what came
// back (docs/design.md, "Outbox and rail delivery"). It is an adapter layer: it
// imports outbox for the contract and never the payment domain, which
// produces the payload below without knowing how a rail is spoken to.
//
// # The instruction payload
//
// outbox.Message.Payload holds one Instruction as JSON; this package owns
// the format:
//
//	{
//	  "paymentId":      "pay-0001",            1-64 of A-Z a-z 0-9 - _ .
//	  "endToEndId":     "E2E-0001",            1-35, SEPA character set, no leading/trailing or double /
//	  "amount":         "125.00",              a decimal STRING: digits, optional point and digits
//	  "currency":       "EUR",                 an active ISO 4217 code
//	  "valueDate":      "2026-11-23",          YYYY-MM-DD
//	  "debtor":   {"name": "ACME Corp",        1-140 printable characters
//	               "account": "ACC-1",         1-34, the debtor's account at its bank
//	               "iban": "GB82…",            optional; valid when given
//	               "bic":  "NWBKGB2L"},        optional; pacs.008: else DebtorAgentBIC
//	  "creditor": {"name": "Jane Doe",
//	               "iban": "DE89…3000",        required: electronic form, registry length, mod-97
//	               "bic":  "COBADEFFXXX"},     ISO 9362, 8 or 11; optional, required by pacs.008
//	  "remittanceInfo": "INV-42",              optional, at most 140 characters
//	  "tenantId":       "acme"
//	}
//
// and, optional beside them, the payment's details: each member of
// txdetail.Details (the payment request's members of the same names, in
// docs/api.md), checked by its rule and written by pacs.008 at its ISO
// path; an unknown member is still refused.
//
// Money is never a float: the amount is a string, decoded to a
// shopspring/decimal, and must be positive with no more decimals than the
// currency's minor units (EUR 2, JPY 0, BHD 3; "1500.00" JPY is fine,
// "1.5" JPY is not) and at most 18 digits in all. Currencies are
// money.MinorUnits's, the one table of intake, the ledger and the rail.
//
// Decoding is strict (DecodeInstruction): member names must match exactly
// (encoding/json alone would read "AMOUNT" as "amount"), and unknown or
// repeated members, trailing data and JSON numbers for strings are
// refused. Validation (Validate, CheckInstruction, CheckMessage) names
// every bad field, also the message's idempotencyKey, participantId
// (visible ASCII: they become headers) and sequenceId (> 0), and the
// railType. A message that fails it is a terminal failure: the relayer
// never sends it, and Send refuses it without a call.
//
// # Rails by name, never late
//
// An outbox message's RailType is a rail's name (the payment's rail:
// DEFAULT, SEPA, TARGET2-HV, ...), or, for instructions enqueued before
// there were rails, a rail type (RailSEPAJSON, RailPacs008), or another
// sender's type (the event stream's). Router serves the rails given by
// type first (fixed at start: a directory entry never takes their
// traffic), and resolves every other RailType as a name through a
// Directory, which the wiring fills from the routing table (this package
// knows no routing). A Destination names the rail's type (the adapter),
// its base URL (empty: RouterConfig.DefaultURL, the process's rail URL)
// and how to read its cut-off on a value date. Senders are built once
// per type and base URL and share the HTTP client.
//
// Before sending, the router reads the rail's cut-off on the
// instruction's valueDate (its execution date, in the rail's zone); at
// or past it nothing is sent and the result is Terminal CUTOFF_MISSED
// (the payment domain returns the payment with that code). An inquiry is
// not a send and goes to the rail whatever the time. An unknown name is
// Terminal UNKNOWN_RAIL, a rail of a type no adapter speaks Terminal
// RAIL_MISCONFIGURED, a directory or cut-off that cannot be read
// Retryable RAIL_LOOKUP_FAILED: none of them sends. Validate makes no
// lookup: it checks what every rail type checks, and Send refuses what
// the rail's own format does (pacs.008's BICs) before any call.
//
// # The rail HTTP API
//
// Both adapters speak the same API (package railsim simulates it, as
// several rails under /rails/{name}); {base} keeps its path prefix:
//
//	POST {base}/v1/instructions   Content-Type: application/json, body JSONRequest
//	                              (the instruction plus participantId, sequenceId)
//	POST {base}/v1/pacs008        Content-Type: application/xml, body a pacs.008.001.09
//	                              FIToFICstmrCdtTrf with one transaction
//	  headers  Idempotency-Key, X-Participant-Id, X-Sequence-Id
//	  200/201  {"status":"ACCEPTED","reference":"..."}        → Delivered
//	  error    {"code":"...","message":"..."}                  → the taxonomy
//	GET  {base}/v1/instructions/{path-escaped idempotency key}
//	  200 ACCEPTED (+reference) → Delivered; 200 REJECTED (+code) → Terminal;
//	  404 → NotReceived; anything else, or no answer → Unknown
//
// The rail is idempotent by key: a key sent again gets the original
// answer.
//
// # Outcomes
//
// A call either got an answer or it did not. An answer is classified by
// its code through the taxonomy (Classify, Codes), never by its message
// text; an error answer without a code is classified as HTTP_<status>.
// Without an answer, what matters is whether the request may have reached
// the rail: a call that never got a connection (DNS, refused, dial
// timeout) is Retryable (CONNECT_FAILED), a call that got one and then
// timed out or lost it is Unknown (TIMEOUT, CONNECTION_CUT, CANCELED), and
// the relayer must Inquire before any resend. net/http's transparent
// replay of such requests is switched off for the same reason, and
// redirects are not followed.
//
// The taxonomy maps ISO 20022 ExternalStatusReason1Code refusals (AC01
// incorrect account, AC04 closed, AC06 blocked, AG01 forbidden, AM04
// insufficient funds, BE01, RC01 invalid BIC, RR04 regulatory, MS03, FF01
// ...) to Terminal, and rail and transport codes (RAIL_BUSY,
// RATE_LIMITED, TEMPORARILY_UNAVAILABLE, HTTP_429/502/503/504, the AB0x
// timeouts) to Retryable. A code it does not know is Retryable with the
// code kept: the rail did not say it took the instruction, a resend under
// the same key cannot duplicate it, and the relayer's attempt cap ends a
// code that never clears in the dead letters, where a human reads it.
// An HTTP 500 without a code is Unknown: the rail may have taken it.
//
// # pacs.008
//
// Pacs008Rail renders pacs.008.001.09 (the version whose XSD
// github.com/moov-io/iso20022 v0.2.1 ships; testdata holds a copy the
// tests validate against with xmllint) from that library's component
// types, except where its generated types are wrong for money: amounts
// there are float64 (0.10 would render 0.1, 1234567.89 as
// 1.23456789e+06), so the amount is written as exact decimal text with
// the currency's minor units; and XSD choices there are sequences (an
// IBAN account would carry an empty <Othr>), so accounts are rendered as
// the choice they are. ParsePacs008, the rail side's reader, parses with
// the library, runs its validation, and checks those two things itself.
// MsgId, InstrId, TxId and UETR derive from the message, so every
// attempt of an instruction carries the same identifiers. DbtrAgt is the
// debtor's BIC, or Pacs008Config.DebtorAgentBIC (the sending
// institution's) when the instruction names none, as the payment
// domain's never do; ChrgBr is Pacs008Config.ChargeBearer (SLEV).
//
// # Secrets in logs
//
// Errors and Results never carry a payload or a full account number;
// bankid.Mask shortens one for a log ("DE89…3000").
package rail
