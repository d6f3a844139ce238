package payment

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/paydispatch/paydispatch/bankid"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/internal/txdetail"
	pmoney "github.com/paydispatch/paydispatch/money"
	"github.com/paydispatch/paydispatch/routing"
)

// invalid is a request refused, naming every field (a JSON path) found
// wrong.
func invalid(fields ...field.Error) *field.Invalid {
	return &field.Invalid{What: "invalid payment", Fields: fields}
}

// PastTolerance is how far in the past a requested execution time may lie
// (clock skew, a request that took a moment to arrive).
const PastTolerance = 5 * time.Minute

// Validate checks a request and returns its amount as Money. Every problem
// is reported, not just the first. The Money is returned whenever the
// amount and the currency themselves are valid, with the error of the other
// fields: a payment refused for another reason still shows its amount.
func Validate(r Request, now time.Time) (Money, error) {
	var errs []field.Error
	add := func(name, format string, args ...any) {
		errs = append(errs, field.Error{Field: name, Detail: fmt.Sprintf(format, args...)})
	}
	if r.PaymentID != "" && !field.ValidID(r.PaymentID) {
		add("paymentId", "use 1 to 64 letters, digits, '-', '_' or '.'")
	}
	if !field.ValidID(r.TenantID) {
		add("tenantId", "required: 1 to 64 letters, digits, '-', '_' or '.'")
	}
	if strings.TrimSpace(r.DebtorAccount) == "" || len(r.DebtorAccount) > 64 {
		add("debtorAccount", "required, at most 64 characters")
	} else if !plaintext.Valid(r.DebtorAccount) {
		add("debtorAccount", "UTF-8 text without control characters")
	}
	// One rule for every format: the amount's spelling (money.ParseDecimal,
	// whose cost is bounded whatever it is sent), then its currency's minor
	// units, so that 0.001 EUR is refused here and not at execution.
	currencyOK := pmoney.Valid(r.Currency)
	amount, err := pmoney.ParseDecimal(r.Amount, pmoney.Unsigned)
	before := len(errs)
	switch {
	case r.Amount == "":
		add("amount", "required, a decimal string such as \"125.00\"")
	case err != nil:
		add("amount", "%v", err)
	case currencyOK:
		if err := pmoney.CheckAmount(amount, r.Currency); err != nil {
			add("amount", "%v", err)
		}
	case !amount.IsPositive():
		add("amount", "must be greater than zero")
	}
	if !currencyOK {
		add("currency", "%q is not an ISO 4217 currency code such as EUR", plaintext.Clip(r.Currency, 8))
	}
	var money Money
	if len(errs) == before {
		money = Money{Amount: amount, Currency: r.Currency}
	}
	if strings.TrimSpace(r.Creditor.Name) == "" || utf8.RuneCountInString(r.Creditor.Name) > 140 {
		add("creditor.name", "required, at most 140 characters")
	} else if !plaintext.Valid(r.Creditor.Name) {
		add("creditor.name", "UTF-8 text without control characters")
	}
	// Every rail routes by the creditor's IBAN; a BIC is optional (SEPA
	// needs none), checked when given.
	if r.Creditor.IBAN == "" {
		add("creditor.iban", "required: the creditor's IBAN, e.g. DE89370400440532013000")
	} else if err := bankid.CheckIBAN(bankid.Electronic(r.Creditor.IBAN)); err != nil {
		add("creditor.iban", "%v", err)
	}
	if r.Creditor.BIC != "" {
		if err := bankid.CheckBIC(strings.ToUpper(r.Creditor.BIC)); err != nil {
			add("creditor.bic", "%v", err)
		}
	}
	switch {
	case r.RequestedExecutionTime.IsZero():
		add("requestedExecutionTime", "required, RFC 3339, e.g. 2026-11-22T16:00:00Z")
	case r.RequestedExecutionTime.Before(now.Add(-PastTolerance)):
		add("requestedExecutionTime", "%s is more than %v in the past", r.RequestedExecutionTime.Format(time.RFC3339), PastTolerance)
	}
	if utf8.RuneCountInString(r.RemittanceInfo) > 140 {
		add("remittanceInfo", "at most 140 characters")
	} else if !plaintext.Valid(r.RemittanceInfo) {
		add("remittanceInfo", "UTF-8 text without control characters")
	}
	if r.Rail != "" && !routing.ValidName(r.Rail) {
		add("rail", "a rail's name: 1-64 letters, digits, '_', '.', ':' or '-'")
	}
	if r.Priority != "" && !r.Priority.Valid() {
		add("priority", "HIGH, NORMAL or LOW (none: NORMAL)")
	}
	errs = append(errs, txdetail.Check(r.Details, "")...)
	if len(errs) > 0 {
		return money, invalid(errs...)
	}
	return money, nil
}
