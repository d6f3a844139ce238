package rail

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moov-io/iso20022/pkg/document"
	"github.com/moov-io/iso20022/pkg/pacs_v09"

	"github.com/paydispatch/paydispatch/internal/field"
)

var renderTime = time.Date(2026, 11, 23, 15, 59, 58, 123e6, time.UTC)

func testPacsRail(t *testing.T) *Pacs008Rail {
	t.Helper()
	r, err := NewPacs008Rail(Pacs008Config{Config: Config{BaseURL: "http://127.0.0.1:1"}, Now: func() time.Time { return renderTime }})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPacs008RendersAmountsExactly(t *testing.T) {
	t.Parallel()
	cases := []struct {
		amount, currency, want string
	}{
		{"0.10", "EUR", `<IntrBkSttlmAmt Ccy="EUR">0.10</IntrBkSttlmAmt>`},
		{"0.1", "EUR", `<IntrBkSttlmAmt Ccy="EUR">0.10</IntrBkSttlmAmt>`},
		{"1234567.89", "EUR", `<IntrBkSttlmAmt Ccy="EUR">1234567.89</IntrBkSttlmAmt>`},
		{"9999999999999999.99", "USD", `<IntrBkSttlmAmt Ccy="USD">9999999999999999.99</IntrBkSttlmAmt>`},
		{"1500", "JPY", `<IntrBkSttlmAmt Ccy="JPY">1500</IntrBkSttlmAmt>`},
		{"1500.00", "JPY", `<IntrBkSttlmAmt Ccy="JPY">1500</IntrBkSttlmAmt>`},
		{"1.5", "BHD", `<IntrBkSttlmAmt Ccy="BHD">1.500</IntrBkSttlmAmt>`},
		{"0.001", "KWD", `<IntrBkSttlmAmt Ccy="KWD">0.001</IntrBkSttlmAmt>`},
		{"0.0001", "CLF", `<IntrBkSttlmAmt Ccy="CLF">0.0001</IntrBkSttlmAmt>`},
	}
	r := testPacsRail(t)
	for _, tc := range cases {
		t.Run(tc.amount+tc.currency, func(t *testing.T) {
			t.Parallel()
			in := goodInstruction()
			in.Amount, in.Currency = tc.amount, tc.currency
			m := messageFor(in, RailPacs008)
			doc, err := r.Render(m)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(doc, []byte(tc.want)) {
				t.Fatalf("want %s in\n%s", tc.want, doc)
			}
			got, err := ParsePacs008(doc)
			if err != nil {
				t.Fatalf("the rendered document does not parse: %v\n%s", err, doc)
			}
			want, _ := ParseAmount(tc.amount)
			if !got.Amount.Equal(want) || got.Currency != tc.currency {
				t.Fatalf("parsed %s %s, want %s %s", got.Amount, got.Currency, want, tc.currency)
			}
			if err := r.Validate(m); err != nil {
				t.Fatalf("Validate: %v", err)
			}
		})
	}
}

func TestPacs008Content(t *testing.T) {
	t.Parallel()
	r := testPacsRail(t)
	in := goodInstruction()
	in.RemittanceInfo = "INV-42 & <co>"
	m := messageFor(in, RailPacs008)
	doc, err := r.Render(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pacs.008.001.09">`,
		`<MsgId>idem-pay-0001</MsgId>`,
		`<CreDtTm>2026-11-23T15:59:58.123</CreDtTm>`,
		`<NbOfTxs>1</NbOfTxs>`,
		`<SttlmInf><SttlmMtd>CLRG</SttlmMtd></SttlmInf>`,
		`<InstrId>instr-pay-0001</InstrId><EndToEndId>E2E-0001</EndToEndId><TxId>pay-0001</TxId><UETR>`,
		`<IntrBkSttlmDt>2026-11-23</IntrBkSttlmDt>`,
		`<ChrgBr>SLEV</ChrgBr>`,
		`<Dbtr><Nm>ACME Corp</Nm></Dbtr><DbtrAcct><Id><IBAN>GB82WEST12345698765432</IBAN></Id></DbtrAcct>`,
		`<DbtrAgt><FinInstnId><BICFI>NWBKGB2L</BICFI></FinInstnId></DbtrAgt>`,
		`<CdtrAgt><FinInstnId><BICFI>COBADEFFXXX</BICFI></FinInstnId></CdtrAgt>`,
		`<Cdtr><Nm>Jane Doe</Nm></Cdtr><CdtrAcct><Id><IBAN>DE89370400440532013000</IBAN></Id></CdtrAcct>`,
		`<RmtInf><Ustrd>INV-42 &amp; &lt;co&gt;</Ustrd></RmtInf>`,
	} {
		if !bytes.Contains(doc, []byte(want)) {
			t.Errorf("want %s in the document", want)
		}
	}
	if t.Failed() {
		t.Logf("%s", doc)
	}
	got, err := ParsePacs008(doc)
	if err != nil {
		t.Fatal(err)
	}
	if got.RemittanceInfo != in.RemittanceInfo || got.CreditorIBAN != in.Creditor.IBAN || got.DebtorBIC != in.Debtor.BIC || got.EndToEndID != in.EndToEndID {
		t.Errorf("round trip: %+v", got)
	}

	// Every attempt of one instruction carries the same identifiers.
	again, _ := testPacsRail(t).Render(m)
	if !bytes.Equal(doc, again) {
		t.Error("two renderings of one message differ")
	}
}

func TestPacs008DebtorWithoutIBAN(t *testing.T) {
	t.Parallel()
	in := goodInstruction()
	in.Debtor.IBAN = ""
	doc, err := testPacsRail(t).Render(messageFor(in, RailPacs008))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte(`<DbtrAcct><Id><Othr><Id>ACC-1</Id></Othr></Id></DbtrAcct>`)) {
		t.Fatalf("want the bank's account id as Othr:\n%s", doc)
	}
	if _, err := ParsePacs008(doc); err != nil {
		t.Fatal(err)
	}
}

func TestPacs008LongIdentifiersAreHashed(t *testing.T) {
	t.Parallel()
	in := goodInstruction()
	m := messageFor(in, RailPacs008)
	m.IdempotencyKey = "0f9d8e7c-6b5a-4f3e-9d2c-1b0a9f8e7d6c:attempt-family"
	doc, err := testPacsRail(t).Render(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParsePacs008(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.MsgID) != 35 || !strings.HasPrefix(got.MsgID, "M") {
		t.Fatalf("MsgId %q: want M and 34 hex digits", got.MsgID)
	}
}

// The library's own view of the rendered document: it parses it into its
// pacs.008.001.09 types, and every part the library models correctly
// passes its validation. Its choice types (accounts) are modelled as
// sequences and cannot pass for any real message; ParsePacs008 checks
// those as choices.
func TestPacs008LibraryValidation(t *testing.T) {
	t.Parallel()
	doc, err := testPacsRail(t).Render(messageFor(goodInstruction(), RailPacs008))
	if err != nil {
		t.Fatal(err)
	}
	d, err := document.ParseIso20022Document(doc)
	if err != nil {
		t.Fatal(err)
	}
	if d.NameSpace() != Pacs008Namespace {
		t.Fatalf("namespace %q", d.NameSpace())
	}
	msg, ok := d.InspectMessage().(*pacs_v09.FIToFICustomerCreditTransferV09)
	if !ok {
		t.Fatalf("message type %T", d.InspectMessage())
	}
	if err := msg.GrpHdr.Validate(); err != nil {
		t.Errorf("GrpHdr: %v", err)
	}
	tx := msg.CdtTrfTxInf[0]
	for name, v := range map[string]interface{ Validate() error }{
		"PmtId": tx.PmtId, "IntrBkSttlmAmt": tx.IntrBkSttlmAmt, "ChrgBr": tx.ChrgBr,
		"Dbtr": tx.Dbtr, "DbtrAgt": tx.DbtrAgt, "CdtrAgt": tx.CdtrAgt, "Cdtr": tx.Cdtr, "RmtInf": *tx.RmtInf,
		"CdtrAcct IBAN": tx.CdtrAcct.Id.IBAN,
	} {
		if err := v.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if tx.IntrBkSttlmAmt.Value != 125 || tx.IntrBkSttlmAmt.Ccy != "EUR" {
		t.Errorf("amount as the library reads it: %v %s", tx.IntrBkSttlmAmt.Value, tx.IntrBkSttlmAmt.Ccy)
	}
}

// The rendered documents validate against the pacs.008.001.09 XSD that
// moov-io/iso20022 ships (copied to testdata), with xmllint (Debian:
// libxml2-utils, which CI installs; a machine without it skips the check,
// CI fails).
func TestPacs008SchemaValid(t *testing.T) {
	t.Parallel()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil && os.Getenv("CI") != "" {
		t.Fatal("xmllint not installed: .ci/run installs libxml2-utils")
	}
	if err != nil {
		t.Skip("xmllint not installed (apt-get install libxml2-utils): XSD check skipped")
	}
	r := testPacsRail(t)
	dir := t.TempDir()
	var files []string
	for i, edit := range []func(*Instruction){
		func(*Instruction) {},
		func(in *Instruction) { in.Debtor.IBAN = ""; in.RemittanceInfo = "" },
		func(in *Instruction) { in.Amount, in.Currency = "1500", "JPY" },
		func(in *Instruction) { in.Amount, in.Currency = "0.125", "BHD" },
		func(in *Instruction) { in.Details = withEveryDetail().Details },
	} {
		in := goodInstruction()
		edit(&in)
		doc, err := r.Render(messageFor(in, RailPacs008))
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, "doc"+string(rune('a'+i))+".xml")
		if err := os.WriteFile(f, doc, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	args := append([]string{"--noout", "--nonet", "--schema", filepath.Join("testdata", "pacs.008.001.09.xsd")}, files...)
	out, err := exec.Command(xmllint, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("xmllint: %v\n%s", err, out)
	}
}

func TestParsePacs008Refuses(t *testing.T) {
	t.Parallel()
	good, err := testPacsRail(t).Render(messageFor(goodInstruction(), RailPacs008))
	if err != nil {
		t.Fatal(err)
	}
	replace := func(old, new string) []byte { return bytes.Replace(good, []byte(old), []byte(new), 1) }
	cases := []struct {
		name string
		doc  []byte
		want string
	}{
		{"empty", nil, "not an XML document"},
		{"json", []byte(`{"Xmlns":"urn:iso:std:iso:20022:tech:xsd:pacs.008.001.09"}`), "not an XML document"},
		{"truncated", good[:len(good)/2], "not a pacs.008 document"},
		{"trailing content", append(append([]byte{}, good...), "<x/>"...), "after the document"},
		{"no namespace", replace(` xmlns="urn:iso:std:iso:20022:tech:xsd:pacs.008.001.09"`, ""), "namespace"},
		{"other version", replace("pacs.008.001.09", "pacs.008.001.08"), "namespace"},
		{"other message", replace("pacs.008.001.09", "pacs.002.001.11"), "namespace"},
		{"two messages", replace("</FIToFICstmrCdtTrf>", "</FIToFICstmrCdtTrf><FIToFICstmrCdtTrf></FIToFICstmrCdtTrf>"), "one FIToFICstmrCdtTrf"},
		{"two transactions", replace("<NbOfTxs>1</NbOfTxs>", "<NbOfTxs>2</NbOfTxs>"), "exactly one transaction"},
		{"float amount", replace(">125.00<", ">1.25e2<"), "IntrBkSttlmAmt"},
		{"negative amount", replace(">125.00<", ">-125.00<"), "IntrBkSttlmAmt"},
		{"zero amount", replace(">125.00<", ">0.00<"), "greater than zero"},
		{"too many decimals", replace(">125.00<", ">125.001<"), "minor units"},
		{"unknown currency", replace(`Ccy="EUR"`, `Ccy="EUX"`), "ISO 4217"},
		{"bad creditor IBAN", replace("DE89370400440532013000", "DE89370400440532013001"), "CdtrAcct"},
		{"IBAN and Othr", replace("<IBAN>DE89370400440532013000</IBAN>", "<IBAN>DE89370400440532013000</IBAN><Othr><Id>X</Id></Othr>"), "exactly one of IBAN and Othr"},
		{"no creditor BIC", replace("<BICFI>COBADEFFXXX</BICFI>", ""), "CdtrAgt"},
		{"bad charge bearer", replace("<ChrgBr>SLEV</ChrgBr>", "<ChrgBr>NONE</ChrgBr>"), "ChargeBearerType1Code"},
		{"no end-to-end id", replace("<EndToEndId>E2E-0001</EndToEndId>", "<EndToEndId></EndToEndId>"), "Max35Text"},
		{"no settlement date", replace("<IntrBkSttlmDt>2026-11-23</IntrBkSttlmDt>", ""), "IntrBkSttlmDt"},
		{"too large", append(bytes.Repeat([]byte(" "), MaxPacs008Bytes), good...), "larger than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParsePacs008(tc.doc)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q in %v", tc.want, err)
			}
			if strings.Contains(err.Error(), "DE89370400440532013001") {
				t.Fatalf("the error quotes an IBAN: %v", err)
			}
		})
	}
}

func TestPacs008ValidateRequiresDebtorBIC(t *testing.T) {
	t.Parallel()
	in := goodInstruction()
	in.Debtor.BIC = ""
	err := testPacsRail(t).Validate(messageFor(in, RailPacs008))
	var ve *field.Invalid
	if !errors.As(err, &ve) || !ve.Has("debtor.bic") {
		t.Fatalf("want debtor.bic named, got %v", err)
	}
}
