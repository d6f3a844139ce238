package rail

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/bankid"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/internal/txdetail"
	"github.com/paydispatch/paydispatch/money"
	"github.com/paydispatch/paydispatch/outbox"
)

// badInstruction lists every problem found, each naming a field (a JSON
// path of the instruction, or a Message field such as idempotencyKey): a
// message that has one is a terminal failure, never sent.
func badInstruction(fields ...field.Error) *field.Invalid {
	return &field.Invalid{What: "invalid instruction", Fields: fields}
}

func fieldErr(name, format string, args ...any) *field.Invalid {
	return badInstruction(field.Error{Field: name, Detail: fmt.Sprintf(format, args...)})
}

// Format is a rail's message format; it decides the destination rules.
type Format int

const (
	// FormatJSON: SEPA-style JSON rails. The creditor needs a valid IBAN;
	// a BIC is optional (SEPA routes by IBAN) and checked when given.
	FormatJSON Format = iota + 1
	// FormatPacs008: ISO 20022 pacs.008 rails. As FormatJSON, and both
	// agents must be named by BIC (DbtrAgt and CdtrAgt are mandatory).
	FormatPacs008
)

func (f Format) String() string {
	switch f {
	case FormatJSON:
		return "json"
	case FormatPacs008:
		return "pacs.008"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Limits from the formats the instruction is rendered into: ISO 20022
// Max35Text for the end-to-end id, Max140Text for names and unstructured
// remittance, Max34Text for a non-IBAN account id; 18 total digits for
// an amount (ActiveCurrencyAndAmount).
const (
	maxEndToEndID  = 35
	maxName        = 140
	maxRemittance  = 140
	maxAccount     = 34
	maxIDLength    = 64
	maxAmountDigit = 18
	maxHeaderValue = 200
)

// CheckInstruction checks an instruction's values for a rail of format
// f and reports every problem, each naming its field.
func CheckInstruction(in Instruction, f Format) error {
	var c checker
	c.id("paymentId", in.PaymentID)
	c.id("tenantId", in.TenantID)
	c.endToEndID(in.EndToEndID)
	c.amount(in.Amount, in.Currency)
	c.valueDate(in.ValueDate)

	c.text("debtor.name", in.Debtor.Name, maxName, true)
	c.text("debtor.account", in.Debtor.Account, maxAccount, true)
	if in.Debtor.IBAN != "" {
		c.iban("debtor.iban", in.Debtor.IBAN)
	}
	switch {
	case in.Debtor.BIC != "":
		c.bic("debtor.bic", in.Debtor.BIC)
	case f == FormatPacs008:
		c.add("debtor.bic", "required by pacs.008 rails (the debtor agent)")
	}

	c.text("creditor.name", in.Creditor.Name, maxName, true)
	if in.Creditor.IBAN == "" {
		c.add("creditor.iban", "required")
	} else {
		c.iban("creditor.iban", in.Creditor.IBAN)
	}
	switch {
	case in.Creditor.BIC != "":
		c.bic("creditor.bic", in.Creditor.BIC)
	case f == FormatPacs008:
		c.add("creditor.bic", "required by pacs.008 rails (the creditor agent)")
	}
	c.text("remittanceInfo", in.RemittanceInfo, maxRemittance, false)
	c.fields = append(c.fields, txdetail.Check(in.Details, "")...)
	return c.err()
}

// CheckMessage checks the outbox fields a rail call depends on: they
// become HTTP headers and the inquiry's path.
func CheckMessage(m outbox.Message) error {
	var c checker
	c.headerValue("idempotencyKey", m.IdempotencyKey)
	if m.IdempotencyKey == "." || m.IdempotencyKey == ".." {
		c.add("idempotencyKey", "must not be a path segment such as . or ..")
	}
	c.headerValue("participantId", m.ParticipantID)
	if m.SequenceID <= 0 {
		c.add("sequenceId", "must be greater than zero, got %d", m.SequenceID)
	}
	return c.err()
}

// ParseAmount returns an instruction amount as a decimal after checking
// its spelling (plain decimal string) and sign. Currency rules are
// CheckInstruction's.
func ParseAmount(s string) (decimal.Decimal, error) {
	if s == "" {
		return decimal.Decimal{}, fmt.Errorf("required, a decimal string such as \"125.00\"")
	}
	d, err := money.ParseDecimal(s, money.Unsigned)
	if err != nil {
		return decimal.Decimal{}, err
	}
	if !d.IsPositive() {
		return decimal.Decimal{}, fmt.Errorf("must be greater than zero")
	}
	return d, nil
}

type checker struct{ fields []field.Error }

func (c *checker) add(name, format string, args ...any) {
	c.fields = append(c.fields, field.Error{Field: name, Detail: fmt.Sprintf(format, args...)})
}

func (c *checker) err() error {
	if len(c.fields) == 0 {
		return nil
	}
	return badInstruction(c.fields...)
}

// id: the domain's identifiers, 1 to 64 of letters, digits, - _ .
func (c *checker) id(name, s string) {
	if s == "" {
		c.add(name, "required")
		return
	}
	if len(s) > maxIDLength {
		c.add(name, "at most %d characters", maxIDLength)
		return
	}
	if !field.ValidID(s) {
		c.add(name, "only letters, digits, '-', '_' and '.'")
	}
}

// endToEndID follows the SEPA rules every rail here accepts: the Latin
// character set, 1 to 35 characters, no leading or trailing '/' and no
// '//'.
func (c *checker) endToEndID(s string) {
	const field = "endToEndId"
	switch {
	case s == "":
		c.add(field, "required")
	case len(s) > maxEndToEndID:
		c.add(field, "at most %d characters", maxEndToEndID)
	case strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") || strings.Contains(s, "//"):
		c.add(field, "must not start or end with '/' or contain '//'")
	default:
		for _, r := range s {
			if !sepaChar(r) {
				c.add(field, "only letters, digits and / - ? : ( ) . , ' + space")
				return
			}
		}
	}
}

func sepaChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/-?:().,'+ ", r)
}

func (c *checker) amount(amount, currency string) {
	d, err := ParseAmount(amount)
	if err != nil {
		c.add("amount", "%v", err)
	}
	units, ok := money.MinorUnits(currency)
	switch {
	case currency == "":
		c.add("currency", "required, an ISO 4217 code such as EUR")
		return
	case !ok:
		c.add("currency", "%q is not an active ISO 4217 currency", plaintext.Clip(currency, 8))
		return
	}
	if err != nil {
		return
	}
	if !d.Equal(d.Truncate(units)) {
		c.add("amount", "%s has %d minor units: at most %d decimal places", currency, units, units)
		return
	}
	if digits := len(d.Truncate(0).String()) + int(units); digits > maxAmountDigit {
		c.add("amount", "too large: at most %d digits in all with %s's %d decimal places", maxAmountDigit, currency, units)
	}
}

func (c *checker) valueDate(s string) {
	if s == "" {
		c.add("valueDate", "required, YYYY-MM-DD")
		return
	}
	if _, err := time.Parse(time.DateOnly, s); err != nil || len(s) != len(time.DateOnly) {
		c.add("valueDate", "not a date in the form YYYY-MM-DD")
	}
}

// text: free text that a rail renders (names, remittance): printable,
// no control characters, at most max characters.
func (c *checker) text(field, s string, max int, required bool) {
	if strings.TrimSpace(s) == "" {
		if required {
			c.add(field, "required")
		} else if s != "" {
			c.add(field, "must not be blank")
		}
		return
	}
	if !utf8.ValidString(s) {
		c.add(field, "not valid UTF-8")
		return
	}
	if n := utf8.RuneCountInString(s); n > max {
		c.add(field, "at most %d characters, got %d", max, n)
		return
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			c.add(field, "contains a control or non-printable character")
			return
		}
	}
}

func (c *checker) iban(field, s string) {
	if err := bankid.CheckIBAN(s); err != nil {
		c.add(field, "%v (%s)", err, bankid.Mask(s))
	}
}

func (c *checker) bic(field, s string) {
	if err := bankid.CheckBIC(s); err != nil {
		c.add(field, "%v", err)
	}
}

// headerValue: a value sent as an HTTP header and in a URL: visible ASCII
// only, so nothing can split a header or smuggle a path.
func (c *checker) headerValue(field, s string) {
	if s == "" {
		c.add(field, "required")
		return
	}
	if len(s) > maxHeaderValue {
		c.add(field, "at most %d characters", maxHeaderValue)
		return
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			c.add(field, "only visible ASCII characters (no spaces or control characters)")
			return
		}
	}
}
