package rail

import (
	"errors"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/outbox"
)

func TestCheckInstruction(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 141)
	cases := []struct {
		name   string
		format Format
		edit   func(*Instruction)
		field  string // "" = valid
	}{
		{"valid json", FormatJSON, func(*Instruction) {}, ""},
		{"valid pacs.008", FormatPacs008, func(*Instruction) {}, ""},
		{"json without debtor bic", FormatJSON, func(in *Instruction) { in.Debtor.BIC = "" }, ""},
		{"json without debtor iban", FormatJSON, func(in *Instruction) { in.Debtor.IBAN = "" }, ""},
		{"pacs.008 without debtor bic", FormatPacs008, func(in *Instruction) { in.Debtor.BIC = "" }, "debtor.bic"},
		{"no remittance", FormatJSON, func(in *Instruction) { in.RemittanceInfo = "" }, ""},
		{"JPY whole amount", FormatJSON, func(in *Instruction) { in.Amount, in.Currency = "1500", "JPY" }, ""},
		{"JPY trailing zeros", FormatJSON, func(in *Instruction) { in.Amount, in.Currency = "1500.00", "JPY" }, ""},
		{"BHD three decimals", FormatJSON, func(in *Instruction) { in.Amount, in.Currency = "1.125", "BHD" }, ""},
		{"amount 18 digits", FormatJSON, func(in *Instruction) { in.Amount = "9999999999999999.99" }, ""},

		{"missing payment id", FormatJSON, func(in *Instruction) { in.PaymentID = "" }, "paymentId"},
		{"payment id charset", FormatJSON, func(in *Instruction) { in.PaymentID = "pay 1" }, "paymentId"},
		{"missing tenant", FormatJSON, func(in *Instruction) { in.TenantID = "" }, "tenantId"},
		{"missing end-to-end id", FormatJSON, func(in *Instruction) { in.EndToEndID = "" }, "endToEndId"},
		{"end-to-end id too long", FormatJSON, func(in *Instruction) { in.EndToEndID = strings.Repeat("E", 36) }, "endToEndId"},
		{"end-to-end id slash", FormatJSON, func(in *Instruction) { in.EndToEndID = "/E2E" }, "endToEndId"},
		{"end-to-end id charset", FormatJSON, func(in *Instruction) { in.EndToEndID = "E2E_1" }, "endToEndId"},
		{"missing amount", FormatJSON, func(in *Instruction) { in.Amount = "" }, "amount"},
		{"zero amount", FormatJSON, func(in *Instruction) { in.Amount = "0.00" }, "amount"},
		{"negative amount", FormatJSON, func(in *Instruction) { in.Amount = "-1.00" }, "amount"},
		{"exponent amount", FormatJSON, func(in *Instruction) { in.Amount = "1e3" }, "amount"},
		{"amount with spaces", FormatJSON, func(in *Instruction) { in.Amount = " 1.00" }, "amount"},
		{"amount with comma", FormatJSON, func(in *Instruction) { in.Amount = "1,00" }, "amount"},
		{"too many decimals for EUR", FormatJSON, func(in *Instruction) { in.Amount = "1.001" }, "amount"},
		{"decimals for JPY", FormatJSON, func(in *Instruction) { in.Amount, in.Currency = "1.5", "JPY" }, "amount"},
		{"amount over 18 digits", FormatJSON, func(in *Instruction) { in.Amount = "99999999999999999.99" }, "amount"},
		{"missing currency", FormatJSON, func(in *Instruction) { in.Currency = "" }, "currency"},
		{"unknown currency", FormatJSON, func(in *Instruction) { in.Currency = "EUX" }, "currency"},
		{"lower-case currency", FormatJSON, func(in *Instruction) { in.Currency = "eur" }, "currency"},
		{"numeric currency", FormatJSON, func(in *Instruction) { in.Currency = "978" }, "currency"},
		{"withdrawn currency", FormatJSON, func(in *Instruction) { in.Currency = "HRK" }, "currency"},
		{"no-currency code", FormatJSON, func(in *Instruction) { in.Currency = "XXX" }, "currency"},
		{"missing value date", FormatJSON, func(in *Instruction) { in.ValueDate = "" }, "valueDate"},
		{"bad value date", FormatJSON, func(in *Instruction) { in.ValueDate = "2026-02-30" }, "valueDate"},
		{"value date with time", FormatJSON, func(in *Instruction) { in.ValueDate = "2026-11-23T16:00:00Z" }, "valueDate"},
		{"missing debtor name", FormatJSON, func(in *Instruction) { in.Debtor.Name = " " }, "debtor.name"},
		{"debtor name too long", FormatJSON, func(in *Instruction) { in.Debtor.Name = long }, "debtor.name"},
		{"debtor name control char", FormatJSON, func(in *Instruction) { in.Debtor.Name = "ACME\x00" }, "debtor.name"},
		{"missing debtor account", FormatJSON, func(in *Instruction) { in.Debtor.Account = "" }, "debtor.account"},
		{"debtor account too long", FormatJSON, func(in *Instruction) { in.Debtor.Account = strings.Repeat("1", 35) }, "debtor.account"},
		{"bad debtor iban", FormatJSON, func(in *Instruction) { in.Debtor.IBAN = "GB82WEST12345698765431" }, "debtor.iban"},
		{"bad debtor bic", FormatJSON, func(in *Instruction) { in.Debtor.BIC = "NWBKGB" }, "debtor.bic"},
		{"missing creditor name", FormatJSON, func(in *Instruction) { in.Creditor.Name = "" }, "creditor.name"},
		{"missing creditor iban", FormatJSON, func(in *Instruction) { in.Creditor.IBAN = "" }, "creditor.iban"},
		{"creditor iban check digits", FormatJSON, func(in *Instruction) { in.Creditor.IBAN = "DE89370400440532013001" }, "creditor.iban"},
		{"creditor iban length", FormatJSON, func(in *Instruction) { in.Creditor.IBAN = "DE8937040044053201300" }, "creditor.iban"},
		{"creditor iban country", FormatJSON, func(in *Instruction) { in.Creditor.IBAN = "ZZ89370400440532013000" }, "creditor.iban"},
		{"creditor iban printed form", FormatJSON, func(in *Instruction) { in.Creditor.IBAN = "DE89 3704 0044 0532 0130 00" }, "creditor.iban"},
		{"creditor iban lower case", FormatJSON, func(in *Instruction) { in.Creditor.IBAN = "de89370400440532013000" }, "creditor.iban"},
		{"no creditor bic: SEPA routes by IBAN", FormatJSON, func(in *Instruction) { in.Creditor.BIC = "" }, ""},
		{"no creditor bic on pacs.008", FormatPacs008, func(in *Instruction) { in.Creditor.BIC = "" }, "creditor.bic"},
		{"creditor bic 9 chars", FormatJSON, func(in *Instruction) { in.Creditor.BIC = "COBADEFFX" }, "creditor.bic"},
		{"creditor bic lower case", FormatJSON, func(in *Instruction) { in.Creditor.BIC = "cobadeffxxx" }, "creditor.bic"},
		{"creditor bic digit country", FormatJSON, func(in *Instruction) { in.Creditor.BIC = "COBA1EFFXXX" }, "creditor.bic"},
		{"remittance too long", FormatJSON, func(in *Instruction) { in.RemittanceInfo = long }, "remittanceInfo"},
		{"remittance blank", FormatJSON, func(in *Instruction) { in.RemittanceInfo = "  " }, "remittanceInfo"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := goodInstruction()
			tc.edit(&in)
			err := CheckInstruction(in, tc.format)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var ve *field.Invalid
			if !errors.As(err, &ve) {
				t.Fatalf("want a *field.Invalid naming %s, got %v", tc.field, err)
			}
			if !ve.Has(tc.field) || len(ve.Fields) != 1 {
				t.Fatalf("want exactly %s named, got %v", tc.field, err)
			}
		})
	}
}

func TestValidationErrorsMaskAccounts(t *testing.T) {
	t.Parallel()
	in := goodInstruction()
	in.Creditor.IBAN = "DE89370400440532013001"
	err := CheckInstruction(in, FormatJSON)
	if err == nil || strings.Contains(err.Error(), in.Creditor.IBAN) {
		t.Fatalf("want an error without the full IBAN, got %v", err)
	}
	if !strings.Contains(err.Error(), "DE89…3001") {
		t.Fatalf("want the masked IBAN in %v", err)
	}
}

func TestDecodeInstruction(t *testing.T) {
	t.Parallel()
	good := `{"paymentId":"p1","endToEndId":"E1","amount":"1.00","currency":"EUR","valueDate":"2026-11-23",` +
		`"debtor":{"name":"A","account":"ACC-1"},"creditor":{"name":"B","iban":"DE89370400440532013000","bic":"COBADEFFXXX"},"tenantId":"t"}`
	cases := []struct {
		name, payload, field string // field "" = decodes
	}{
		{"valid", good, ""},
		{"unknown field", strings.Replace(good, `"tenantId"`, `"extra":1,"tenantId"`, 1), "extra"},
		{"unknown party field", strings.Replace(good, `"account":"ACC-1"`, `"account":"ACC-1","iban2":"x"`, 1), "debtor.iban2"},
		{"case-folded name", strings.Replace(good, `"amount"`, `"Amount"`, 1), "Amount"},
		{"repeated field", strings.Replace(good, `"amount":"1.00"`, `"amount":"1.00","amount":"1000.00"`, 1), "amount"},
		{"amount as number", strings.Replace(good, `"amount":"1.00"`, `"amount":1.00`, 1), "amount"},
		{"debtor as string", strings.Replace(good, `{"name":"A","account":"ACC-1"}`, `"A"`, 1), "debtor"},
		{"creditor name as number", strings.Replace(good, `"name":"B"`, `"name":7`, 1), "creditor.name"},
		{"trailing data", good + `{}`, "payload"},
		{"array", `[` + good + `]`, "payload"},
		{"not json", `amount=1`, "payload"},
		{"empty", ``, "payload"},
		{"truncated", good[:40], "payload"},
		{"too large", `{"remittanceInfo":"` + strings.Repeat("x", MaxPayloadBytes) + `"}`, "payload"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := DecodeInstruction([]byte(tc.payload))
			if tc.field == "" {
				if err != nil {
					t.Fatalf("want decoded, got %v", err)
				}
				return
			}
			var ve *field.Invalid
			if !errors.As(err, &ve) || !ve.Has(tc.field) {
				t.Fatalf("want an error naming %s, got %v", tc.field, err)
			}
		})
	}
}

func TestCheckMessage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		edit  func(*outbox.Message)
		field string
	}{
		{"valid", func(*outbox.Message) {}, ""},
		{"no idempotency key", func(m *outbox.Message) { m.IdempotencyKey = "" }, "idempotencyKey"},
		{"key with newline", func(m *outbox.Message) { m.IdempotencyKey = "a\nb" }, "idempotencyKey"},
		{"key with space", func(m *outbox.Message) { m.IdempotencyKey = "a b" }, "idempotencyKey"},
		{"dot-dot key", func(m *outbox.Message) { m.IdempotencyKey = ".." }, "idempotencyKey"},
		{"no participant", func(m *outbox.Message) { m.ParticipantID = "" }, "participantId"},
		{"zero sequence", func(m *outbox.Message) { m.SequenceID = 0 }, "sequenceId"},
		{"negative sequence", func(m *outbox.Message) { m.SequenceID = -3 }, "sequenceId"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := messageFor(goodInstruction(), RailSEPAJSON)
			tc.edit(&m)
			err := CheckMessage(m)
			var ve *field.Invalid
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case tc.field != "" && (!errors.As(err, &ve) || !ve.Has(tc.field)):
				t.Fatalf("want an error naming %s, got %v", tc.field, err)
			}
		})
	}
}

func TestRailValidateNamesEveryProblem(t *testing.T) {
	t.Parallel()
	r, err := NewHTTPRail(Config{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	in := goodInstruction()
	in.Amount = "0"
	in.Creditor.BIC = "X"
	m := messageFor(in, "OTHER")
	m.SequenceID = 0
	err = r.Validate(m)
	var ve *field.Invalid
	if !errors.As(err, &ve) {
		t.Fatalf("want a *field.Invalid, got %v", err)
	}
	for _, f := range []string{"railType", "sequenceId", "amount", "creditor.bic"} {
		if !ve.Has(f) {
			t.Errorf("%s not named in %v", f, err)
		}
	}
	if res := r.Send(t.Context(), m); res.Outcome != outbox.Terminal || res.Code != CodeInvalidPayload {
		t.Errorf("Send of an invalid message: want Terminal %s without a call, got %+v", CodeInvalidPayload, res)
	}
}
