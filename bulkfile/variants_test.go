package bulkfile_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/bulkfile"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/xmlschema"
)

// SwissSample is PostFinance's SPS sample (testdata/samples) made a file
// the bank would take today: its NbOfTxs (7) corrected to its 8
// transactions and its execution dates moved to due, nothing else.
func SwissSample(t testing.TB, due time.Time) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "samples", "postfinance-musterfile-pain.001.001.03.ch.02.xml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(raw), "<NbOfTxs>7</NbOfTxs>", "<NbOfTxs>8</NbOfTxs>", 1)
	for _, d := range []string{"2020-07-28", "2020-07-22", "2020-07-24", "2020-07-05", "2020-06-17"} {
		s = strings.ReplaceAll(s, "<ReqdExctnDt>"+d+"</ReqdExctnDt>", "<ReqdExctnDt>"+due.Format(time.DateOnly)+"</ReqdExctnDt>")
	}
	return []byte(s)
}

// TestSwissVariant: a Swiss SPS file is checked against ISO's
// pain.001.001.03 in SIX's namespace, and what it carries is mapped each
// transaction on its own: an IBAN and InstdAmt make a payment; a creditor
// account by Othr/Id, an equivalent amount to convert are rejected with
// their reason; a structured reference (QRR, RF) becomes the remittance
// text when there is no other and is kept with the file with the
// batch-booking flag, the charge bearer and the ids.
func TestSwissVariant(t *testing.T) {
	t.Parallel()
	due := time.Now().UTC().AddDate(0, 0, 7).Truncate(24 * time.Hour)
	f, err := bulkfile.DecodePain001(context.Background(), bytes.NewReader(SwissSample(t, due)))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, r := range f.Requests {
		got = append(got, fmt.Sprintf("%d %s %s %s %s %q", f.Places[i], r.PaymentID, r.Amount, r.Currency, r.Creditor.IBAN, r.RemittanceInfo))
	}
	want := []string{
		`1 EndToEndId-01-01 6.20 CHF CH5109000000250092291 "Rechnung 1122"`,
		`3 EndToEndId-02-02 12.00 CHF CH2909000000250094239 "Rechnung 20200615636.365"`,
		`4 EndToEndId-03-01 5.00 CHF CH5109000000250092291 "Salaire Juli"`,
		`5 EndToEndId-03-02 2.00 CHF CH010023512312312365L "Mitteilung Lohn"`, // its IBAN is Phase A's to refuse
		`7 EEndToEndId-05-01 4 CHF CH7730000001250094239 "976471818744726494745968140"`,
		`8 EEndToEndId-06-01 6 CHF CH5109000000250092291 "RF18539007547034"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var bad []string
	for _, le := range f.Bad {
		for _, fe := range le.Fields {
			bad = append(bad, fmt.Sprintf("%d %s", le.Line, fe.Field))
		}
	}
	if want := "2 PmtInf[2]/CdtTrfTxInf[1]/CdtrAcct/Id/Othr/Id; 6 PmtInf[4]/CdtTrfTxInf[1]/Amt/EqvtAmt"; strings.Join(bad, "; ") != want {
		t.Fatalf("rejected %q, want %q", strings.Join(bad, "; "), want)
	}
	o := f.Pain001
	if o.MsgID != "MsgId-001" || o.MsgNmID != "pain.001.001.03.ch.02" || o.Version != "pain.001.001.03" || len(o.PmtInfs) != 5 ||
		o.Namespace != "http://www.six-interbank-clearing.com/de/pain.001.001.03.ch.02.xsd" || o.NbOfTxs != "8" || o.CtrlSum != "38.00" {
		t.Fatalf("origin %+v", o)
	}
	pi := o.PmtInfs[4]
	if pi.PmtInfID != "PmtInfId-05" || pi.BatchBooking == nil || !*pi.BatchBooking || len(pi.Txs) != 2 {
		t.Fatalf("PmtInf 5: %+v", pi)
	}
	if tx := pi.Txs[1]; tx.Place != 8 || tx.InstrID != "InstrId-06-01" || tx.EndToEndID != "EEndToEndId-06-01" ||
		tx.CreditorRef != "RF18539007547034" || tx.CreditorRefType != "SCOR" {
		t.Fatalf("transaction 8: %+v", tx)
	}
	if tx := o.PmtInfs[3].Txs[0]; tx.ChargeBearer != "SLEV" {
		t.Fatalf("transaction 6: %+v", tx)
	}
}

// TestPain001Mapping: each mapped element, alone in a transaction, in the
// plain ISO namespace and in a variant's.
func TestPain001Mapping(t *testing.T) {
	t.Parallel()
	const ch = "http://www.six-interbank-clearing.com/de/pain.001.001.03.ch.02.xsd"
	tx := func(amt, acct, extra string) string {
		return `<CdtTrfTxInf><PmtId><EndToEndId>e1</EndToEndId></PmtId><Amt>` + amt + `</Amt>` + extra +
			`<Cdtr><Nm>Maria</Nm></Cdtr><CdtrAcct><Id>` + acct + `</Id></CdtrAcct>`
	}
	iban := `<IBAN>CH5109000000250092291</IBAN>`
	instd := `<InstdAmt Ccy="CHF">4.00</InstdAmt>`
	strd := func(tp, ref string) string {
		return `<RmtInf><Strd><CdtrRefInf>` + tp + `<Ref>` + ref + `</Ref></CdtrRefInf></Strd></RmtInf></CdtTrfTxInf>`
	}
	tests := []struct {
		name, ns, tx, pmtExtra string
		wantBad                string // the rejected field, "" for a payment
		wantRemittance         string
	}{
		{"plain", ch, tx(instd, iban, "") + `</CdtTrfTxInf>`, "", "", ""},
		{"DK namespace", "urn:iso:std:iso:20022:tech:xsd:pain.001.003.03", tx(instd, iban, "") + `</CdtTrfTxInf>`, "", "", ""},
		{"EqvtAmt in the currency sent", ch, tx(`<EqvtAmt><Amt Ccy="EUR">3.00</Amt><CcyOfTrf>EUR</CcyOfTrf></EqvtAmt>`, iban, "") + `</CdtTrfTxInf>`, "", "", ""},
		{"EqvtAmt to convert", ch, tx(`<EqvtAmt><Amt Ccy="CHF">3.00</Amt><CcyOfTrf>EUR</CcyOfTrf></EqvtAmt>`, iban, "") + `</CdtTrfTxInf>`, "", "Amt/EqvtAmt", ""},
		{"Othr/Id", ch, tx(instd, `<Othr><Id>01-12345-6</Id></Othr>`, "") + `</CdtTrfTxInf>`, "", "CdtrAcct/Id/Othr/Id", ""},
		{"ChrgBr SLEV", ch, tx(instd, iban, `<ChrgBr>SLEV</ChrgBr>`) + `</CdtTrfTxInf>`, "", "", ""},
		{"ChrgBr DEBT", ch, tx(instd, iban, `<ChrgBr>DEBT</ChrgBr>`) + `</CdtTrfTxInf>`, "", "ChrgBr", ""},
		{"ChrgBr of the block", ch, tx(instd, iban, "") + `</CdtTrfTxInf>`, `<ChrgBr>SHAR</ChrgBr>`, "ChrgBr", ""},
		{"RF reference", ch, tx(instd, iban, "") + strd(`<Tp><CdOrPrtry><Cd>SCOR</Cd></CdOrPrtry></Tp>`, "RF18539007547034"), "", "", "RF18539007547034"},
		{"RF reference, bad check digits", ch, tx(instd, iban, "") + strd("", "RF18539007547035"), "", "CdtrRefInf/Ref", ""},
		{"QR reference", ch, tx(instd, iban, "") + strd(`<Tp><CdOrPrtry><Prtry>QRR</Prtry></CdOrPrtry></Tp>`, "210000000003139471430009017"), "", "", "210000000003139471430009017"},
		{"QR reference, bad check digit", ch, tx(instd, iban, "") + strd(`<Tp><CdOrPrtry><Prtry>QRR</Prtry></CdOrPrtry></Tp>`, "210000000003139471430009018"), "", "CdtrRefInf/Ref", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := `<Document xmlns="` + tt.ns + `"><CstmrCdtTrfInitn><GrpHdr><MsgId>m</MsgId><CreDtTm>2026-01-01T00:00:00</CreDtTm><NbOfTxs>1</NbOfTxs><InitgPty/></GrpHdr>` +
				`<PmtInf><PmtInfId>p</PmtInfId><PmtMtd>TRF</PmtMtd><BtchBookg>false</BtchBookg><ReqdExctnDt>2099-01-01</ReqdExctnDt><Dbtr/><DbtrAcct><Id><IBAN>CH9300762011623852957</IBAN></Id></DbtrAcct><DbtrAgt><FinInstnId/></DbtrAgt>` +
				tt.pmtExtra + tt.tx + `</PmtInf></CstmrCdtTrfInitn></Document>`
			f, err := bulkfile.DecodePain001(context.Background(), strings.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.wantBad == "" && (len(f.Requests) != 1 || f.Requests[0].RemittanceInfo != tt.wantRemittance):
				t.Fatalf("requests %+v, bad %+v; want one with remittance %q", f.Requests, f.Bad, tt.wantRemittance)
			case tt.wantBad != "" && (len(f.Bad) != 1 || !strings.HasSuffix(f.Bad[0].Fields[0].Field, tt.wantBad)):
				t.Fatalf("bad %+v; want %s", f.Bad, tt.wantBad)
			}
			if pi := f.Pain001.PmtInfs[0]; pi.BatchBooking == nil || *pi.BatchBooking || f.Pain001.Namespace != tt.ns {
				t.Fatalf("origin %+v", f.Pain001)
			}
		})
	}
}

// TestOtherMessages: a file of another message is named by its namespace,
// or by Document's first element when its namespace is not ISO's or
// SIX's; an unknown namespace is named with what is taken.
func TestOtherMessages(t *testing.T) {
	t.Parallel()
	tests := []struct{ doc, want string }{
		{`<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.008.001.08"><CstmrDrctDbtInitn/></Document>`, "the file is a pain.008 (customer direct debit initiation), not a pain.001"},
		{`<Document xmlns="urn:example:bank"><BkToCstmrStmt/></Document>`, "the file is a camt.053 (bank to customer statement), not a pain.001"},
		{`<Document xmlns="urn:example:bank"><Unknown/></Document>`, `namespace "urn:example:bank" is not a supported pain.001 version or variant: want one of urn:iso:std:iso:20022:tech:xsd:pain.001.001.03,`},
		{`<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.001.001.02"><CstmrCdtTrfInitn/></Document>`, "http://www.six-interbank-clearing.com/de/pain.001.001.03.ch.02.xsd (Swiss Payment Standards"},
		{`<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.999.001.01"><X/></Document>`, "the file is a pain.999, not a pain.001"},
	}
	for _, tt := range tests {
		_, err := bulkfile.DecodePain001(context.Background(), strings.NewReader(tt.doc))
		var refusal *bulkfile.FormatError
		if !errors.As(err, &refusal) || !strings.Contains(refusal.Detail, tt.want) || refusal.Where != "line 1: element Document" {
			t.Errorf("%s: %v; want %q", tt.doc, err, tt.want)
		}
	}
}

// TestStatusReport: the pain.002 of a file: each transaction's status
// from where its payment is, or its rejection with an ISO reason code;
// each block's and the group's status aggregated; and the document
// validates against the official pain.002.001.11 schema, with this
// package's validator and with xmllint.
func TestStatusReport(t *testing.T) {
	t.Parallel()
	tx := func(place int, key string) payment.TxOrigin {
		return payment.TxOrigin{Place: place, InstrID: fmt.Sprintf("I%d", place), EndToEndID: fmt.Sprintf("E%d", place), Key: key}
	}
	rep := payment.Pain001Report{
		BatchID: "batch-0123456789abcdef01234567",
		Origin: payment.Pain001Origin{MsgID: "MsgId-001", CreDtTm: "2026-01-01T10:00:00", MsgNmID: "pain.001.001.03.ch.02", NbOfTxs: "10", CtrlSum: "100.00",
			PmtInfs: []payment.PmtInfOrigin{
				{PmtInfID: "P1", NbOfTxs: "3", Txs: []payment.TxOrigin{tx(1, "k1"), tx(2, ""), tx(3, "k3")}},
				{PmtInfID: "P2", Txs: []payment.TxOrigin{tx(4, "k4"), tx(5, "k5")}},
				{PmtInfID: "P3", Txs: []payment.TxOrigin{tx(6, ""), tx(7, "k7")}},
				{PmtInfID: "P4", Txs: []payment.TxOrigin{tx(8, "k8"), tx(9, "k9"), tx(10, "k10")}},
			}},
		Rejections: map[int][]field.Error{
			2: {{Field: "PmtInf[1]/CdtTrfTxInf[2]/CdtrAcct/Id/Othr/Id", Detail: "not an IBAN"}},
			6: {{Field: "paymentId", Detail: "also on line 1"}, {Field: "amount", Detail: "must be greater than zero"}},
		},
		Outcomes: map[string]payment.Outcome{
			"k1": {Status: payment.StatusScheduled}, "k3": {Status: payment.StatusDelivered},
			"k4": {Status: payment.StatusDelivered}, "k5": {Status: payment.StatusAccepted},
			"k7": {Status: payment.StatusFailed, Reason: "INSUFFICIENT_FUNDS: balance 1.00 EUR"},
			// On a rail with a cut-off: rolled to the Monday, held, refused.
			"k8":  {Status: payment.StatusScheduled, Reason: "ROLLED: ...", Rail: "SEPA", ExecutionDate: "2026-01-05"},
			"k9":  {Status: payment.StatusHeld, Reason: "CUTOFF: no slot before rail SEPA's cut-off", Rail: "SEPA", ExecutionDate: "2026-01-02"},
			"k10": {Status: payment.StatusRejected, Reason: "CUTOFF_MISSED: no slot before rail SEPA's cut-off", Rail: "SEPA", ExecutionDate: "2026-01-02"},
		},
	}
	var b bytes.Buffer
	if err := bulkfile.StatusReport(&b, rep, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	flat := regexp.MustCompile(`>\s+<`).ReplaceAllString(doc, "><")
	for _, want := range []string{
		`<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.002.001.11">`,
		`<MsgId>SR0123456789abcdef01234567-`, `<CreDtTm>2026-01-02T03:04:05Z</CreDtTm>`,
		`<OrgnlMsgId>MsgId-001</OrgnlMsgId>`, `<OrgnlMsgNmId>pain.001.001.03.ch.02</OrgnlMsgNmId>`, `<GrpSts>PART</GrpSts>`,
		`<OrgnlPmtInfId>P1</OrgnlPmtInfId>`, `<OrgnlNbOfTxs>3</OrgnlNbOfTxs>`, `<PmtInfSts>PART</PmtInfSts>`,
		`<OrgnlEndToEndId>E1</OrgnlEndToEndId><TxSts>ACCP</TxSts>`,
		`<TxSts>RJCT</TxSts><StsRsnInf><Rsn><Cd>AC01</Cd>`, `<OrgnlEndToEndId>E3</OrgnlEndToEndId><TxSts>ACSC</TxSts>`,
		`<OrgnlPmtInfId>P2</OrgnlPmtInfId><PmtInfSts>ACSP</PmtInfSts>`,
		`<Cd>DU04</Cd>`, `<Cd>AM01</Cd>`, `<Cd>AM04</Cd>`, `<AddtlInf>FAILED: INSUFFICIENT_FUNDS: balance 1.00 EUR</AddtlInf>`,
		`<OrgnlPmtInfId>P3</OrgnlPmtInfId><PmtInfSts>RJCT</PmtInfSts>`,
		`<OrgnlEndToEndId>E8</OrgnlEndToEndId><TxSts>ACCP</TxSts><StsRsnInf><AddtlInf>execution date 2026-01-05 on rail SEPA</AddtlInf></StsRsnInf><OrgnlTxRef><PmtTpInf><LclInstrm><Prtry>SEPA</Prtry>`,
		`<OrgnlEndToEndId>E9</OrgnlEndToEndId><TxSts>PDNG</TxSts><StsRsnInf><Rsn><Cd>TM01</Cd></Rsn>`,
		`<OrgnlEndToEndId>E10</OrgnlEndToEndId><TxSts>RJCT</TxSts><StsRsnInf><Rsn><Cd>TM01</Cd></Rsn>`,
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("the report lacks %q:\n%s", want, doc)
		}
	}
	validPain002(t, []byte(doc))
	Xmllint(t, filepath.Join("schemas", "pain.002.001.11.xsd"), b.Bytes())
}

// Xmllint validates doc against the XSD at xsd with xmllint (Debian:
// libxml2-utils, which CI installs; a machine without it skips the check,
// CI fails).
func Xmllint(t *testing.T, xsd string, doc []byte) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil && os.Getenv("CI") != "" {
		t.Fatal("xmllint not installed: .ci/run installs libxml2-utils")
	}
	if err != nil {
		t.Skip("xmllint not installed (apt-get install libxml2-utils): XSD check skipped")
	}
	f := filepath.Join(t.TempDir(), "report.xml")
	if err := os.WriteFile(f, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(xmllint, "--noout", "--nonet", "--schema", xsd, f).CombinedOutput(); err != nil {
		t.Fatalf("xmllint: %v\n%s\n%s", err, out, doc)
	}
}

// validPain002 fails t unless doc is valid against the pain.002.001.11 schema.
func validPain002(t *testing.T, doc []byte) {
	t.Helper()
	xsd, err := os.ReadFile(filepath.Join("schemas", "pain.002.001.11.xsd"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := xmlschema.Compile(xsd)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(bytes.NewReader(doc)); err != nil {
		t.Fatalf("invalid: %v\n%s", err, doc)
	}
}
