package ledger

import (
	"errors"
	"sort"
	"strings"

	"github.com/paydispatch/paydispatch/internal/field"
)

// Code says why an operation was refused. Callers decide on codes, never
// on message text.
type Code string

// The codes. An error that is not a *Refusal (a lost connection, a
// serialization failure) is not a refusal: retrying the operation is safe,
// since every write is idempotent by its reference.
const (
	// A debit beyond the available balance of an account that is not
	// limit-based. Details: balance, amount.
	CodeInsufficientFunds Code = "INSUFFICIENT_FUNDS"
	// A limit booking would take a period's window over its limit; nothing
	// was booked. Details: period, limit, utilized, amount, windowStart.
	CodeLimitExceeded Code = "LIMIT_EXCEEDED"
	// No rate for the currency pair, in either direction.
	CodeFXUnavailable Code = "FX_UNAVAILABLE"
	// Unwind of a contract already unwound.
	CodeFXAlreadyUnwound Code = "FX_ALREADY_UNWOUND"
	// No FX contract with that id.
	CodeFXContractNotFound Code = "FX_CONTRACT_NOT_FOUND"
	// A quote handed to a booking does not follow from its own rate.
	CodeInvalidQuote Code = "INVALID_QUOTE"
	// No account with that id.
	CodeAccountNotFound Code = "ACCOUNT_NOT_FOUND"
	// An account id already used for an account with a different spec.
	CodeAccountConflict Code = "ACCOUNT_CONFLICT"
	// An operator named an account id that several tenants use, and no
	// tenant.
	CodeAccountAmbiguous Code = "ACCOUNT_AMBIGUOUS"
	// An amount in another currency than the account's.
	CodeCurrencyMismatch Code = "CURRENCY_MISMATCH"
	// No transaction with that id (a reversal).
	CodeTransactionNotFound Code = "TRANSACTION_NOT_FOUND"
	// The transaction was reversed already, under another reference.
	// Details: reversal (its transaction id), reference.
	CodeAlreadyReversed Code = "ALREADY_REVERSED"
	// A reversal cannot itself be reversed.
	CodeNotReversible Code = "NOT_REVERSIBLE"
	// A reference (processId:step) already used for a different operation.
	CodeReferenceConflict Code = "REFERENCE_CONFLICT"
	// Bad input; the refusal's Invalid names each bad field.
	CodeInvalidArgument Code = "INVALID_ARGUMENT"
)

// Refusal is an operation the ledger refused, with its code.
type Refusal struct {
	Code    Code
	Message string
	// Details are the facts behind the refusal, decimals as exact strings
	// (for logs, process data and problem documents).
	Details map[string]string
	// Invalid names each bad field of an INVALID_ARGUMENT (nil: none).
	// errors.As finds it through the refusal, so that bad input reads the
	// same wherever it was checked.
	Invalid *field.Invalid
}

func (e *Refusal) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	for _, f := range e.fields() {
		b.WriteString("; ")
		b.WriteString(f.Field)
		b.WriteString(": ")
		b.WriteString(f.Detail)
	}
	keys := make([]string, 0, len(e.Details))
	for k := range e.Details {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(k + "=" + e.Details[k])
		if i == len(keys)-1 {
			b.WriteString(")")
		}
	}
	return b.String()
}

func (e *Refusal) fields() []field.Error {
	if e.Invalid == nil {
		return nil
	}
	return e.Invalid.Fields
}

// Is makes errors.Is(err, &ledger.Refusal{Code: c}) match any *Refusal
// with code c, and the sentinels below match their code.
func (e *Refusal) Is(target error) bool {
	t, ok := target.(*Refusal)
	return ok && t.Code == e.Code
}

// Unwrap is the refusal's *field.Invalid, if any.
func (e *Refusal) Unwrap() error {
	if e.Invalid == nil {
		return nil
	}
	return e.Invalid
}

// Sentinels for errors.Is.
var (
	ErrInsufficientFunds   = &Refusal{Code: CodeInsufficientFunds}
	ErrLimitExceeded       = &Refusal{Code: CodeLimitExceeded}
	ErrFXUnavailable       = &Refusal{Code: CodeFXUnavailable}
	ErrFXAlreadyUnwound    = &Refusal{Code: CodeFXAlreadyUnwound}
	ErrFXContractNotFound  = &Refusal{Code: CodeFXContractNotFound}
	ErrInvalidQuote        = &Refusal{Code: CodeInvalidQuote}
	ErrAccountNotFound     = &Refusal{Code: CodeAccountNotFound}
	ErrAccountConflict     = &Refusal{Code: CodeAccountConflict}
	ErrAccountAmbiguous    = &Refusal{Code: CodeAccountAmbiguous}
	ErrCurrencyMismatch    = &Refusal{Code: CodeCurrencyMismatch}
	ErrTransactionNotFound = &Refusal{Code: CodeTransactionNotFound}
	ErrAlreadyReversed     = &Refusal{Code: CodeAlreadyReversed}
	ErrNotReversible       = &Refusal{Code: CodeNotReversible}
	ErrReferenceConflict   = &Refusal{Code: CodeReferenceConflict}
	ErrInvalidArgument     = &Refusal{Code: CodeInvalidArgument}
)

// CodeOf returns the code of the first *Refusal in err's chain, or "".
func CodeOf(err error) Code {
	var e *Refusal
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Refuse returns a *Refusal with code and message.
func Refuse(code Code, message string, details map[string]string) *Refusal {
	return &Refusal{Code: code, Message: message, Details: details}
}

// InvalidArgument returns an INVALID_ARGUMENT *Refusal of what
// ("account") naming the bad fields, or nil when there are none.
func InvalidArgument(what string, fields []field.Error) error {
	if len(fields) == 0 {
		return nil
	}
	return &Refusal{Code: CodeInvalidArgument, Message: "invalid " + what,
		Invalid: &field.Invalid{What: "invalid " + what, Fields: fields}}
}
