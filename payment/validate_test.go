package payment_test

import (
	"errors"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/payment"
)

// The creditor of validRequest: what must never reach the workflow
// engine's history.
const (
	validCreditor = "Jane Doe"
	validIBAN     = "DE89370400440532013000"
)

func validRequest(now time.Time) payment.Request {
	return payment.Request{
		PaymentID: "pay-0001", TenantID: "acme", DebtorAccount: "ACC-1", Amount: "125.00", Currency: "EUR",
		Creditor:               payment.Creditor{Name: validCreditor, IBAN: validIBAN, BIC: "COBADEFFXXX"},
		RequestedExecutionTime: now.Add(time.Hour), RemittanceInfo: "INV-42",
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 15, 55, 0, 0, time.UTC)
	tests := []struct {
		name   string
		change func(*payment.Request)
		fields []string // the fields reported, in order; none: valid
	}{
		{"valid", func(*payment.Request) {}, nil},
		{"no payment id is fine", func(r *payment.Request) { r.PaymentID = "" }, nil},
		{"IBAN with spaces, lower case", func(r *payment.Request) { r.Creditor.IBAN = "de89 3704 0044 0532 0130 00" }, nil},
		{"BIC of 8", func(r *payment.Request) { r.Creditor.BIC = "COBADEFF" }, nil},
		{"BIC in lower case", func(r *payment.Request) { r.Creditor.BIC = "cobadeffxxx" }, nil},
		{"BIC with digits in its prefix", func(r *payment.Request) { r.Creditor.BIC = "1234DEFF" }, nil},
		{"IBAN as printed", func(r *payment.Request) { r.Creditor.IBAN = "de89 3704 0044 0532 0130 00" }, nil},
		{"BIC with a digit for country", func(r *payment.Request) { r.Creditor.BIC = "COBA1EFF" }, []string{"creditor.bic"}},
		{"just inside the past tolerance", func(r *payment.Request) { r.RequestedExecutionTime = now.Add(-4 * time.Minute) }, nil},
		{"bad payment id", func(r *payment.Request) { r.PaymentID = "pay 1" }, []string{"paymentId"}},
		{"a NUL in the name", func(r *payment.Request) { r.Creditor.Name = "Jane\x00Doe" }, []string{"creditor.name"}},
		{"not UTF-8 in the remittance", func(r *payment.Request) { r.RemittanceInfo = "INV \xff" }, []string{"remittanceInfo"}},
		{"a line break in the remittance", func(r *payment.Request) { r.RemittanceInfo = "INV-1\nINV-2" }, []string{"remittanceInfo"}},
		{"a NUL in the debtor account", func(r *payment.Request) { r.DebtorAccount = "ACC\x00" }, []string{"debtorAccount"}},
		{"accents and CJK are text", func(r *payment.Request) { r.Creditor.Name = "Zoë Ñúñez 株式会社" }, nil},
		{"no tenant", func(r *payment.Request) { r.TenantID = "" }, []string{"tenantId"}},
		{"zero amount", func(r *payment.Request) { r.Amount = "0.00" }, []string{"amount"}},
		{"negative amount", func(r *payment.Request) { r.Amount = "-1" }, []string{"amount"}},
		{"float-ish amount", func(r *payment.Request) { r.Amount = "1e3x" }, []string{"amount"}},
		{"too many decimals", func(r *payment.Request) { r.Amount = "1.00001" }, []string{"amount"}},
		{"more decimals than EUR's", func(r *payment.Request) { r.Amount = "0.001" }, []string{"amount"}},
		{"decimals in yen", func(r *payment.Request) { r.Amount, r.Currency = "100.50", "JPY" }, []string{"amount"}},
		{"whole yen", func(r *payment.Request) { r.Amount, r.Currency = "100", "JPY" }, nil},
		{"three decimals in dinars", func(r *payment.Request) { r.Amount, r.Currency = "1.005", "BHD" }, nil},
		{"an exponent", func(r *payment.Request) { r.Amount = "1e3" }, []string{"amount"}},
		{"a huge exponent", func(r *payment.Request) { r.Amount = "1e2147483647" }, []string{"amount"}},
		{"a leading plus", func(r *payment.Request) { r.Amount = "+5.00" }, []string{"amount"}},
		{"a bare fraction", func(r *payment.Request) { r.Amount = ".50" }, []string{"amount"}},
		{"a trailing point", func(r *payment.Request) { r.Amount = "5." }, []string{"amount"}},
		{"at the cap", func(r *payment.Request) { r.Amount = "1000000000000000" }, []string{"amount"}},
		{"below the cap", func(r *payment.Request) { r.Amount = "999999999999999.99" }, nil},
		{"gold is no currency", func(r *payment.Request) { r.Currency = "XAU" }, []string{"currency"}},
		{"unknown currency", func(r *payment.Request) { r.Currency = "EURO" }, []string{"currency"}},
		{"lower-case currency", func(r *payment.Request) { r.Currency = "eur" }, []string{"currency"}},
		{"IBAN check digits", func(r *payment.Request) { r.Creditor.IBAN = "DE89370400440532013001" }, []string{"creditor.iban"}},
		{"IBAN length", func(r *payment.Request) { r.Creditor.IBAN = "DE8937040044053201300" }, []string{"creditor.iban"}},
		{"IBAN country", func(r *payment.Request) { r.Creditor.IBAN = "ZZ89370400440532013000" }, []string{"creditor.iban"}},
		{"bad BIC", func(r *payment.Request) { r.Creditor.BIC = "COBA" }, []string{"creditor.bic"}},
		{"no creditor account", func(r *payment.Request) { r.Creditor.IBAN, r.Creditor.BIC = "", "" }, []string{"creditor.iban"}},
		{"no creditor name", func(r *payment.Request) { r.Creditor.Name = " " }, []string{"creditor.name"}},
		{"too far in the past", func(r *payment.Request) { r.RequestedExecutionTime = now.Add(-time.Hour) }, []string{"requestedExecutionTime"}},
		{"no execution time", func(r *payment.Request) { r.RequestedExecutionTime = time.Time{} }, []string{"requestedExecutionTime"}},
		{"several at once", func(r *payment.Request) { r.Amount, r.Currency = "", "XXX1" }, []string{"amount", "currency"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := validRequest(now)
			tt.change(&r)
			money, err := payment.Validate(r, now)
			if len(tt.fields) == 0 {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				if money.Currency != r.Currency || !money.Amount.IsPositive() {
					t.Fatalf("money = %+v", money)
				}
				return
			}
			var ve *field.Invalid
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a *field.Invalid", err)
			}
			if len(ve.Fields) != len(tt.fields) {
				t.Fatalf("fields = %+v, want %v", ve.Fields, tt.fields)
			}
			for i, f := range tt.fields {
				if ve.Fields[i].Field != f || ve.Fields[i].Detail == "" {
					t.Errorf("field %d = %+v, want %s", i, ve.Fields[i], f)
				}
			}
		})
	}
}
