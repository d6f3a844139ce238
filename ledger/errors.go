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

// The codes. An error that is not a *Error (a lost connection, a
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
	// Bad input; Fields names each bad field.
	CodeInvalidArgument Code = "INVALID_ARGUMENT"
)

// Error is a refusal with its code.
type Error struct {
	Code    Code
	Message string
	// Details are the facts behind the refusal, decimals as exact strings
	// (for logs, process data and problem documents).
	Details map[string]string
	// Fields names each bad field of an INVALID_ARGUMENT.
	Fields []FieldError
}

// FieldError names a bad input field and what is wrong with it.
type FieldError = field.Error

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	for _, f := range e.Fields {
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

// Is makes errors.Is(err, &ledger.Error{Code: c}) match any *Error with
// code c, and the sentinels below match their code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is.
var (
	ErrInsufficientFunds   = &Error{Code: CodeInsufficientFunds}
	ErrLimitExceeded       = &Error{Code: CodeLimitExceeded}
	ErrFXUnavailable       = &Error{Code: CodeFXUnavailable}
	ErrFXAlreadyUnwound    = &Error{Code: CodeFXAlreadyUnwound}
	ErrFXContractNotFound  = &Error{Code: CodeFXContractNotFound}
	ErrInvalidQuote        = &Error{Code: CodeInvalidQuote}
	ErrAccountNotFound     = &Error{Code: CodeAccountNotFound}
	ErrAccountConflict     = &Error{Code: CodeAccountConflict}
	ErrAccountAmbiguous    = &Error{Code: CodeAccountAmbiguous}
	ErrCurrencyMismatch    = &Error{Code: CodeCurrencyMismatch}
	ErrTransactionNotFound = &Error{Code: CodeTransactionNotFound}
	ErrAlreadyReversed     = &Error{Code: CodeAlreadyReversed}
	ErrNotReversible       = &Error{Code: CodeNotReversible}
	ErrReferenceConflict   = &Error{Code: CodeReferenceConflict}
	ErrInvalidArgument     = &Error{Code: CodeInvalidArgument}
)

// CodeOf returns the code of the first *Error in err's chain, or "".
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Errorf returns an *Error with code and message.
func Errorf(code Code, message string, details map[string]string) *Error {
	return &Error{Code: code, Message: message, Details: details}
}

// Invalid collects field errors; Err returns nil when there are none.
type Invalid struct{ Fields []FieldError }

// Add records that field is bad.
func (v *Invalid) Add(field, detail string) {
	v.Fields = append(v.Fields, FieldError{Field: field, Detail: detail})
}

// Err returns an INVALID_ARGUMENT *Error listing the fields, or nil.
func (v *Invalid) Err(what string) error {
	if len(v.Fields) == 0 {
		return nil
	}
	return &Error{Code: CodeInvalidArgument, Message: "invalid " + what, Fields: v.Fields}
}
