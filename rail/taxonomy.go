package rail

import (
	"sort"
	"strconv"

	"github.com/paydispatch/paydispatch/outbox"
)

// Local codes: what this package puts in outbox.Result.Code when the rail
// said nothing (it could not be reached, or its answer was cut off).
const (
	// CodeInvalidPayload: Validate refused the message; it was not sent.
	CodeInvalidPayload = "INVALID_PAYLOAD"
	// CodeUnknownRailType: no rail is configured for Message.RailType
	// (a router without a directory).
	CodeUnknownRailType = "UNKNOWN_RAIL_TYPE"
	// CodeUnknownRail: neither the directory nor the rails by type know
	// Message.RailType; nothing was sent.
	CodeUnknownRail = "UNKNOWN_RAIL"
	// CodeRailMisconfigured: the directory's rail cannot be spoken to (a
	// type no adapter speaks, a base URL no client takes); nothing was
	// sent.
	CodeRailMisconfigured = "RAIL_MISCONFIGURED"
	// CodeRailLookupFailed: the directory could not be read (or the
	// rail's cut-off not computed); nothing was sent.
	CodeRailLookupFailed = "RAIL_LOOKUP_FAILED"
	// CodeCutoffMissed: the instruction's rail had passed its cut-off
	// for the instruction's value date; it was not sent.
	CodeCutoffMissed = "CUTOFF_MISSED"
	// CodeConnectFailed: no connection to the rail (DNS, refused, dial
	// timeout): the request never left, so a resend is safe.
	CodeConnectFailed = "CONNECT_FAILED"
	// CodeTimeout: the call's deadline passed after the request was (or
	// may have been) written.
	CodeTimeout = "TIMEOUT"
	// CodeConnectionCut: the connection failed after the request was (or
	// may have been) written, before a whole answer came back.
	CodeConnectionCut = "CONNECTION_CUT"
	// CodeCanceled: the caller's context was canceled after the request
	// was (or may have been) written.
	CodeCanceled = "CANCELED"
	// CodeBadAnswer: the rail answered 2xx but not in its documented form.
	CodeBadAnswer = "BAD_ANSWER"
)

// CodeInfo is one row of the error taxonomy.
type CodeInfo struct {
	Code    string
	Outcome outbox.Outcome
	Meaning string
}

// taxonomy maps every code this package knows to what it means for the
// instruction. Outcomes are only Terminal, Retryable or Unknown: a code
// never means delivered. The ISO 20022 codes are ExternalStatusReason1Code
// values a rail sends with a rejection; the rest are transport and local
// codes. Decisions are made on the code alone, never on message text.
var taxonomy = map[string]CodeInfo{}

func init() {
	for _, c := range []CodeInfo{
		// ISO 20022 refusals: the instruction as sent will never pass.
		{"AC01", outbox.Terminal, "incorrect account number"},
		{"AC02", outbox.Terminal, "invalid debtor account number"},
		{"AC03", outbox.Terminal, "invalid creditor account number"},
		{"AC04", outbox.Terminal, "closed account number"},
		{"AC05", outbox.Terminal, "closed debtor account number"},
		{"AC06", outbox.Terminal, "blocked account"},
		{"AC07", outbox.Terminal, "closed creditor account number"},
		{"AC13", outbox.Terminal, "invalid debtor account type"},
		{"AG01", outbox.Terminal, "transaction forbidden on this account"},
		{"AG02", outbox.Terminal, "invalid bank operation code"},
		{"AG03", outbox.Terminal, "transaction type not supported"},
		{"AM01", outbox.Terminal, "zero amount"},
		{"AM02", outbox.Terminal, "amount not allowed"},
		{"AM03", outbox.Terminal, "currency not allowed"},
		{"AM04", outbox.Terminal, "insufficient funds at agent"},
		{"AM05", outbox.Terminal, "duplication"},
		{"AM09", outbox.Terminal, "wrong amount"},
		{"AM12", outbox.Terminal, "invalid amount"},
		{"BE01", outbox.Terminal, "inconsistent with end customer"},
		{"BE04", outbox.Terminal, "missing creditor address"},
		{"BE05", outbox.Terminal, "unrecognised initiating party"},
		{"BE06", outbox.Terminal, "unknown end customer"},
		{"BE07", outbox.Terminal, "missing debtor address"},
		{"CNOR", outbox.Terminal, "creditor bank is not registered"},
		{"DNOR", outbox.Terminal, "debtor bank is not registered"},
		{"DT01", outbox.Terminal, "invalid date"},
		{"DUPL", outbox.Terminal, "duplicate payment"},
		{"ED05", outbox.Terminal, "settlement failed"},
		{"FF01", outbox.Terminal, "invalid file format"},
		{"FOCR", outbox.Terminal, "following cancellation request"},
		{"FRAD", outbox.Terminal, "fraudulent origin"},
		{"MD07", outbox.Terminal, "end customer deceased"},
		{"MS02", outbox.Terminal, "not specified reason, customer generated"},
		{"MS03", outbox.Terminal, "not specified reason, agent generated"},
		{"NARR", outbox.Terminal, "narrative (reason in the message)"},
		{"RC01", outbox.Terminal, "bank identifier (BIC) incorrect"},
		{"RR01", outbox.Terminal, "missing debtor account or identification"},
		{"RR02", outbox.Terminal, "missing debtor name or address"},
		{"RR03", outbox.Terminal, "missing creditor name or address"},
		{"RR04", outbox.Terminal, "regulatory reason"},
		{"SL01", outbox.Terminal, "specific service offered by debtor agent"},
		{"TM01", outbox.Terminal, "received after the cut-off time"},
		{"AB02", outbox.Terminal, "clearing aborted: fatal error"},
		{"AB04", outbox.Terminal, "settlement aborted: fatal error"},
		{"AB09", outbox.Terminal, "error at the creditor agent"},
		{"AB10", outbox.Terminal, "error at the instructed agent"},

		// ISO 20022 aborts caused by a party being slow or away: the rail
		// did not settle it; a later attempt may pass.
		{"AB01", outbox.Retryable, "clearing aborted: timeout"},
		{"AB03", outbox.Retryable, "settlement aborted: timeout"},
		{"AB05", outbox.Retryable, "timeout at the creditor agent"},
		{"AB06", outbox.Retryable, "timeout at the instructed agent"},
		{"AB07", outbox.Retryable, "agent offline"},
		{"AB08", outbox.Retryable, "creditor agent offline"},

		// Rail and transport codes: the rail did not take it this time.
		{"RAIL_BUSY", outbox.Retryable, "the rail is busy"},
		{"RATE_LIMITED", outbox.Retryable, "over the rail's rate limit"},
		{"TEMPORARILY_UNAVAILABLE", outbox.Retryable, "the rail is temporarily unavailable"},
		{"HTTP_408", outbox.Retryable, "the rail timed out reading the request (no code)"},
		{"HTTP_429", outbox.Retryable, "too many requests (no code)"},
		{"HTTP_502", outbox.Retryable, "bad gateway (no code)"},
		{"HTTP_503", outbox.Retryable, "service unavailable (no code)"},
		{"HTTP_504", outbox.Retryable, "gateway timeout (no code)"},
		{"HTTP_401", outbox.Retryable, "unauthorized (no code): a configuration fault, not the instruction's"},
		{"HTTP_403", outbox.Retryable, "forbidden (no code): a configuration fault, not the instruction's"},
		{CodeConnectFailed, outbox.Retryable, "no connection: the request never left"},
		{CodeRailLookupFailed, outbox.Retryable, "the rail's configuration could not be read: nothing was sent"},

		// The request as sent can never pass.
		{"HTTP_400", outbox.Terminal, "bad request (no code)"},
		{"HTTP_413", outbox.Terminal, "request too large (no code)"},
		{"HTTP_415", outbox.Terminal, "unsupported media type (no code)"},
		{"HTTP_422", outbox.Terminal, "unprocessable instruction (no code)"},
		{CodeInvalidPayload, outbox.Terminal, "refused by validation before any call"},
		{CodeUnknownRailType, outbox.Terminal, "no rail configured for the rail type"},
		{CodeUnknownRail, outbox.Terminal, "no rail of that name or type: nothing was sent"},
		{CodeRailMisconfigured, outbox.Terminal, "the rail's type or base URL cannot be used: nothing was sent"},
		{CodeCutoffMissed, outbox.Terminal, "the rail's cut-off for the value date had passed: nothing was sent"},

		// The rail may have the instruction: inquire before any resend.
		{"HTTP_500", outbox.Unknown, "internal error (no code): the rail may have taken it"},
		{CodeTimeout, outbox.Unknown, "deadline passed after the request was written"},
		{CodeConnectionCut, outbox.Unknown, "connection failed after the request was written"},
		{CodeCanceled, outbox.Unknown, "canceled after the request was written"},
		{CodeBadAnswer, outbox.Unknown, "a 2xx answer not in the documented form"},
	} {
		taxonomy[c.Code] = c
	}
}

// Classify says what a rail code means for the instruction: Terminal,
// Retryable or Unknown. A code the table does not know is Retryable: the
// rail did not say it took the instruction, and a resend under the same
// idempotency key cannot duplicate it; the relayer caps attempts, so an
// unknown code that never clears ends in the dead letters with the code
// kept for a human.
func Classify(code string) outbox.Outcome {
	if c, ok := taxonomy[code]; ok {
		return c.Outcome
	}
	return outbox.Retryable
}

// Known reports whether the taxonomy has code.
func Known(code string) bool {
	_, ok := taxonomy[code]
	return ok
}

// HTTPCode is the code of an error answer that carries none of its own:
// "HTTP_" and the status, e.g. HTTP_503.
func HTTPCode(status int) string { return "HTTP_" + strconv.Itoa(status) }

// ClassifyAnswer classifies an error answer: by its code when it has one,
// else by its HTTP status (as HTTPCode). It returns the code it used.
func ClassifyAnswer(status int, code string) (outbox.Outcome, string) {
	if code == "" {
		code = HTTPCode(status)
	}
	return Classify(code), code
}

// Codes lists the taxonomy, sorted by code, for documentation and tests.
func Codes() []CodeInfo {
	out := make([]CodeInfo, 0, len(taxonomy))
	for _, c := range taxonomy {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}
