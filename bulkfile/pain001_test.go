package bulkfile_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/bulkfile"
	"github.com/paydispatch/paydispatch/payment"
)

// versions are the pain.001 versions bulkfile ships a schema for.
var versions = []string{"03", "04", "05", "06", "07", "08", "09", "10", "11"}

func namespace(v string) string { return "urn:iso:std:iso:20022:tech:xsd:pain.001.001." + v }

// painTx is one CdtTrfTxInf of a test document.
type painTx struct {
	id, amount, ccy string
	extra           string // elements after the creditor account, e.g. RmtInf
}

// painDoc is a minimal valid pain.001 of a version: one PmtInf unless
// more are given, each element in its place, so that a test changes only
// what it is about.
type painDoc struct {
	version      string
	grpNb        string // "" counts the transactions
	grpSum       string // "" leaves CtrlSum out
	pmtNb        string // the first PmtInf's NbOfTxs ("" leaves it out)
	pmtSum       string
	date         string // ReqdExctnDt's content; "" a DtTm (a bare date up to .07)
	txs          []painTx
	morePmtInf   [][]painTx
	afterHeader  string // raw text put right after the GrpHdr
	trailing     string // after </Document>
	declaration  string // "" the usual one
	documentAttr string
}

func (d painDoc) tx(t painTx) string {
	bic := "BICFI"
	if d.version == "03" {
		bic = "BIC"
	}
	if t.ccy == "" {
		t.ccy = "EUR"
	}
	return fmt.Sprintf(`
      <CdtTrfTxInf>
        <PmtId><EndToEndId>%s</EndToEndId></PmtId>
        <Amt><InstdAmt Ccy="%s">%s</InstdAmt></Amt>
        <CdtrAgt><FinInstnId><%s>COBADEFFXXX</%s></FinInstnId></CdtrAgt>
        <Cdtr><Nm>Jane Doe</Nm></Cdtr>
        <CdtrAcct><Id><IBAN>DE89370400440532013000</IBAN></Id></CdtrAcct>%s
      </CdtTrfTxInf>`, t.id, t.ccy, t.amount, bic, bic, t.extra)
}

func (d painDoc) pmtInf(n int, txs []painTx, nb, sum string) string {
	bic := "BICFI"
	if d.version == "03" {
		bic = "BIC"
	}
	date := d.date
	if date == "" {
		date = "<DtTm>2030-01-01T16:00:00Z</DtTm>"
		if d.version < "08" {
			date = "2030-01-01"
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `
    <PmtInf>
      <PmtInfId>PMT-%d</PmtInfId>
      <PmtMtd>TRF</PmtMtd>`, n)
	if nb != "" {
		fmt.Fprintf(&b, "\n      <NbOfTxs>%s</NbOfTxs>", nb)
	}
	if sum != "" {
		fmt.Fprintf(&b, "\n      <CtrlSum>%s</CtrlSum>", sum)
	}
	fmt.Fprintf(&b, `
      <ReqdExctnDt>%s</ReqdExctnDt>
      <Dbtr><Nm>Acme Corp</Nm></Dbtr>
      <DbtrAcct><Id><Othr><Id>ACC-1</Id></Othr></Id></DbtrAcct>
      <DbtrAgt><FinInstnId><%s>COBADEFFXXX</%s></FinInstnId></DbtrAgt>`, date, bic, bic)
	for _, t := range txs {
		b.WriteString(d.tx(t))
	}
	b.WriteString("\n    </PmtInf>")
	return b.String()
}

func (d painDoc) String() string {
	if d.version == "" {
		d.version = "09"
	}
	if d.txs == nil {
		d.txs = []painTx{{id: "pay-1", amount: "1.00"}}
	}
	n := len(d.txs)
	for _, more := range d.morePmtInf {
		n += len(more)
	}
	if d.grpNb == "" {
		d.grpNb = fmt.Sprint(n)
	}
	if d.declaration == "" {
		d.declaration = `<?xml version="1.0" encoding="UTF-8"?>`
	}
	var b strings.Builder
	fmt.Fprintf(&b, `%s
<Document xmlns="%s"%s>
  <CstmrCdtTrfInitn>
    <GrpHdr>
      <MsgId>MSG-1</MsgId>
      <CreDtTm>2030-01-01T10:00:00Z</CreDtTm>
      <NbOfTxs>%s</NbOfTxs>`, d.declaration, namespace(d.version), d.documentAttr, d.grpNb)
	if d.grpSum != "" {
		fmt.Fprintf(&b, "\n      <CtrlSum>%s</CtrlSum>", d.grpSum)
	}
	b.WriteString(`
      <InitgPty><Nm>Acme Corp</Nm></InitgPty>
    </GrpHdr>`)
	b.WriteString(d.afterHeader)
	b.WriteString(d.pmtInf(1, d.txs, d.pmtNb, d.pmtSum))
	for i, more := range d.morePmtInf {
		b.WriteString(d.pmtInf(i+2, more, "", ""))
	}
	b.WriteString(`
  </CstmrCdtTrfInitn>
</Document>
`)
	b.WriteString(d.trailing)
	return b.String()
}

func decodePain(t *testing.T, doc string) (bulkfile.File, error) {
	t.Helper()
	f, err := bulkfile.DecodePain001(context.Background(), strings.NewReader(doc))
	if err == nil && len(f.Requests)+len(f.Bad) != f.Declared {
		t.Fatalf("%d requests + %d bad != %d declared", len(f.Requests), len(f.Bad), f.Declared)
	}
	return f, err
}

// wantRefusal checks err is a *bulkfile.FormatError whose Where and
// Detail hold what is given.
func wantRefusal(t *testing.T, err error, where, detail string) {
	t.Helper()
	var refusal *bulkfile.FormatError
	if !errors.As(err, &refusal) {
		t.Fatalf("got %v (%T), want a refusal", err, err)
	}
	if !strings.Contains(refusal.Where, where) || !strings.Contains(refusal.Detail, detail) {
		t.Fatalf("refused with\n  Where  %q\n  Detail %q\nwant Where with %q, Detail with %q", refusal.Where, refusal.Detail, where, detail)
	}
}

func TestPain001Namespaces(t *testing.T) {
	t.Parallel()
	var want []string
	for _, v := range versions {
		want = append(want, namespace(v))
	}
	if got := bulkfile.Pain001Namespaces(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// Every shipped version: a valid file decodes into its payments, with the
// version's own spelling of the date and the BIC.
func TestDecodePain001Versions(t *testing.T) {
	t.Parallel()
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			doc := painDoc{version: v, grpSum: "126.00", pmtNb: "2", pmtSum: "126.00", txs: []painTx{
				{id: "pay-1", amount: "125.00", extra: "\n        <RmtInf><Ustrd>INV-1</Ustrd><Ustrd>final</Ustrd></RmtInf>"},
				{id: "pay-2", amount: "1", ccy: "CHF"},
			}}
			f, err := decodePain(t, doc.String())
			if err != nil {
				t.Fatal(err)
			}
			at := time.Date(2030, 1, 1, 16, 0, 0, 0, time.UTC)
			if v < "08" {
				at = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			}
			creditor := payment.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"}
			want := []payment.Request{
				{PaymentID: "pay-1", DebtorAccount: "ACC-1", Amount: "125.00", Currency: "EUR", Creditor: creditor, RequestedExecutionTime: at, RemittanceInfo: "INV-1 final"},
				{PaymentID: "pay-2", DebtorAccount: "ACC-1", Amount: "1", Currency: "CHF", Creditor: creditor, RequestedExecutionTime: at},
			}
			if len(f.Requests) != 2 || f.Requests[0] != want[0] || f.Requests[1] != want[1] || fmt.Sprint(f.Places) != "[1 2]" || f.Declared != 2 || len(f.Bad) != 0 {
				t.Fatalf("got %+v at %v, %d declared, bad %+v", f.Requests, f.Places, f.Declared, f.Bad)
			}
		})
	}
}

// The attacks that used to lose payments behind a success, each refused
// (or reported) as it should be.
func TestPain001Attacks(t *testing.T) {
	t.Parallel()
	one := painDoc{}.String()
	misspelt := strings.Replace(painDoc{grpNb: "2", grpSum: "3.00", txs: []painTx{{id: "p1", amount: "1.00"}, {id: "p2", amount: "2.00"}}}.String(),
		"<CdtTrfTxInf>\n        <PmtId><EndToEndId>p2", "<CdtTrfTxlnf>\n        <PmtId><EndToEndId>p2", 1)
	misspelt = strings.Replace(misspelt, "</CdtTrfTxInf>\n    </PmtInf>", "</CdtTrfTxlnf>\n    </PmtInf>", 1)
	tests := []struct {
		name, doc     string
		where, detail string
	}{
		{"a second Document after the first", one + strings.TrimPrefix(painDoc{txs: []painTx{{id: "p2", amount: "9.00"}}}.String(), `<?xml version="1.0" encoding="UTF-8"?>`),
			"line 28", "a second root element Document"},
		{"a misspelt transaction behind right-looking figures", misspelt,
			"line 25: element Document/CstmrCdtTrfInitn/PmtInf[1]/CdtTrfTxlnf", "unknown element CdtTrfTxlnf in PmtInf: expected CdtTrfTxInf or the end of PmtInf"},
		{"NbOfTxs over the transactions", painDoc{grpNb: "5"}.String(),
			"line 7: element Document/CstmrCdtTrfInitn/GrpHdr/NbOfTxs", "GrpHdr/NbOfTxs says 5, the file has 1 CdtTrfTxInf"},
		{"garbage after the root", one + "garbage",
			"line 27", "content after the end of the root element"},
		{"a markup-looking tail after the root", one + "<!-- fine --><?pi fine?>\n<x/>",
			"line 28", "a second root element x"},
		{"an unsupported version", strings.Replace(one, "pain.001.001.09", "pain.001.001.99", 1),
			"line 2: element Document", `namespace "urn:iso:std:iso:20022:tech:xsd:pain.001.001.99" is not a supported pain.001 version or variant: want one of urn:iso:std:iso:20022:tech:xsd:pain.001.001.03, `},
		{"UTF-16 declared", strings.Replace(one, "UTF-8", "UTF-16", 1),
			"line 1", `the XML declaration names the encoding "UTF-16": only UTF-8 is accepted`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := decodePain(t, tt.doc)
			wantRefusal(t, err, tt.where, tt.detail)
		})
	}
	t.Run("a DtTm without its offset", func(t *testing.T) {
		t.Parallel()
		f, err := decodePain(t, painDoc{date: "<DtTm>2030-01-01T16:00:00</DtTm>", txs: []painTx{{id: "p1", amount: "1"}, {id: "p2", amount: "2"}}}.String())
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Requests) != 0 || len(f.Bad) != 2 || f.Bad[1].Line != 2 {
			t.Fatalf("got %+v, bad %+v", f.Requests, f.Bad)
		}
		fe := f.Bad[0].Fields[0]
		if fe.Field != "PmtInf[1]/ReqdExctnDt/DtTm" || !strings.Contains(fe.Detail, "no UTC offset: add one, such as 2030-01-01T16:00:00Z") {
			t.Fatalf("got %+v", fe)
		}
	})
}

// Every kind of schema violation refuses the file, naming the element, its
// line and what was expected.
func TestPain001SchemaRefusals(t *testing.T) {
	t.Parallel()
	good := painDoc{}.String()
	replace := func(old, new string) string {
		if !strings.Contains(good, old) {
			panic("no " + old)
		}
		return strings.Replace(good, old, new, 1)
	}
	tests := []struct {
		name, doc     string
		where, detail string
	}{
		{"unknown element", replace("<Dbtr>", "<Debtor/><Dbtr>"),
			"line 14: element Document/CstmrCdtTrfInitn/PmtInf[1]/Debtor", "unknown element Debtor in PmtInf: expected PoolgAdjstmntDt or Dbtr"},
		{"missing required element", replace("<Amt><InstdAmt Ccy=\"EUR\">1.00</InstdAmt></Amt>", ""),
			"element Document/CstmrCdtTrfInitn/PmtInf[1]/CdtTrfTxInf[1]/CdtrAgt", "missing required element Amt before CdtrAgt"},
		{"missing at the end", replace("<InitgPty><Nm>Acme Corp</Nm></InitgPty>", ""),
			"line 9: element Document/CstmrCdtTrfInitn/GrpHdr", "missing required element InitgPty at the end of GrpHdr"},
		{"wrong order", replace("<Dbtr><Nm>Acme Corp</Nm></Dbtr>", "<Dbtr><Nm>Acme Corp</Nm></Dbtr><BtchBookg>true</BtchBookg>"),
			"line 14: element Document/CstmrCdtTrfInitn/PmtInf[1]/BtchBookg", "element BtchBookg is out of order: in PmtInf it comes before Dbtr; expected DbtrAcct"},
		{"a required element skipped", replace("<Dbtr><Nm>Acme Corp</Nm></Dbtr>", ""),
			"line 15: element Document/CstmrCdtTrfInitn/PmtInf[1]/DbtrAcct", "missing required element Dbtr before DbtrAcct"},
		{"too many", replace("<MsgId>MSG-1</MsgId>", "<MsgId>MSG-1</MsgId><MsgId>MSG-2</MsgId>"),
			"element Document/CstmrCdtTrfInitn/GrpHdr/MsgId", "MsgId may occur at most one time in GrpHdr"},
		{"both branches of a choice", replace("<Id><Othr><Id>ACC-1</Id></Othr></Id>", "<Id><IBAN>DE89370400440532013000</IBAN><Othr><Id>ACC-1</Id></Othr></Id>"),
			"element Document/CstmrCdtTrfInitn/PmtInf[1]/DbtrAcct/Id/Othr", "Id holds one of IBAN or Othr, and already has IBAN"},
		{"pattern", replace(`Ccy="EUR"`, `Ccy="eur"`),
			"element Document/CstmrCdtTrfInitn/PmtInf[1]/CdtTrfTxInf[1]/Amt/InstdAmt", `attribute Ccy: "eur" is not a valid ActiveOrHistoricCurrencyCode: it must match the pattern [A-Z]{3,3}`},
		{"length", replace("<MsgId>MSG-1</MsgId>", "<MsgId>"+strings.Repeat("M", 36)+"</MsgId>"),
			"line 5: element Document/CstmrCdtTrfInitn/GrpHdr/MsgId", "value of 36 characters: Max35Text allows at most 35"},
		{"empty", replace("<MsgId>MSG-1</MsgId>", "<MsgId></MsgId>"),
			"element Document/CstmrCdtTrfInitn/GrpHdr/MsgId", "value of 0 characters: Max35Text must be at least 1"},
		{"enumeration", replace("<PmtMtd>TRF</PmtMtd>", "<PmtMtd>WIRE</PmtMtd>"),
			"element Document/CstmrCdtTrfInitn/PmtInf[1]/PmtMtd", `"WIRE" is not a valid PaymentMethod3Code: want one of CHK, TRF, TRA`},
		{"fraction digits", replace(">1.00</InstdAmt>", ">1.000001</InstdAmt>"),
			"InstdAmt", "at most 5 digits after the point"},
		{"total digits", replace(">1.00</InstdAmt>", ">1234567890123456789</InstdAmt>"),
			"InstdAmt", "at most 18 digits"},
		{"a negative amount", replace(">1.00</InstdAmt>", ">-1.00</InstdAmt>"),
			"InstdAmt", "at least 0"},
		{"not a number", replace(">1.00</InstdAmt>", ">1,00</InstdAmt>"),
			"InstdAmt", `"1,00" is not a valid ActiveOrHistoricCurrencyAndAmount_SimpleType: want a decimal`},
		{"a date that is not", replace("<CreDtTm>2030-01-01T10:00:00Z</CreDtTm>", "<CreDtTm>2030-02-30T10:00:00Z</CreDtTm>"),
			"GrpHdr/CreDtTm", "is not a valid ISODateTime"},
		{"missing Ccy", replace(`<InstdAmt Ccy="EUR">`, `<InstdAmt>`),
			"InstdAmt", "missing required attribute Ccy (ActiveOrHistoricCurrencyCode)"},
		{"an undeclared attribute", replace("<Cdtr>", `<Cdtr lang="en">`),
			"PmtInf[1]/CdtTrfTxInf[1]/Cdtr", "attribute lang is not allowed on Cdtr: it has no attributes"},
		{"xsi:type", replace("<Cdtr>", `<Cdtr xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="X">`),
			"Cdtr", "attribute xsi:type is not accepted"},
		{"text among elements", replace("<Cdtr><Nm>", "<Cdtr>Jane<Nm>"),
			"Cdtr", `text "Jane" is not allowed in Cdtr: it holds elements only`},
		{"an element in a value", replace("<Nm>Jane Doe</Nm>", "<Nm>Jane<b>Doe</b></Nm>"),
			"Cdtr/Nm/b", "no element is allowed in Nm: it holds a value of type Max140Text"},
		{"another namespace inside", replace("<Dbtr>", `<x:Dbtr xmlns:x="urn:other"/><Dbtr>`),
			"PmtInf[1]/Dbtr", `element Dbtr is in namespace "urn:other"`},
		{"another root", strings.Replace(good, "<Document ", "<Doc ", 1), "line 2: element Doc", "want Document"},
		{"a DTD", strings.Replace(good, "\n<Document", "\n<!DOCTYPE d [<!ENTITY x \"y\">]>\n<Document", 1),
			"line 2", "a DTD (<!DOCTYPE>) or other <!...> declaration is refused"},
		{"an XML declaration later", "\n" + good, "line 2", "an XML declaration is allowed only at the very start"},
		{"nested too deep", strings.Replace(painDoc{version: "11"}.String(), "</CdtTrfTxInf>", "<SplmtryData><Envlp>"+strings.Repeat("<a>", 70), 1),
			"CdtTrfTxInf[1]/SplmtryData[1]/Envlp/a/a/a/", "elements nested over 64 deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := decodePain(t, tt.doc)
			wantRefusal(t, err, tt.where, tt.detail)
		})
	}
}

// Control figures: each NbOfTxs and CtrlSum must match what the file has.
func TestPain001Counts(t *testing.T) {
	t.Parallel()
	two := []painTx{{id: "p1", amount: "1.50"}, {id: "p2", amount: "2"}}
	tests := []struct {
		name          string
		doc           painDoc
		where, detail string // "" accepted
	}{
		{"all right", painDoc{grpSum: "3.5", pmtNb: "2", pmtSum: "3.50000", txs: two}, "", ""},
		{"leading zeros", painDoc{grpNb: "002", txs: two}, "", ""},
		{"group NbOfTxs under", painDoc{grpNb: "1", txs: two}, "GrpHdr/NbOfTxs", "GrpHdr/NbOfTxs says 1, the file has 2 CdtTrfTxInf"},
		{"group CtrlSum", painDoc{grpSum: "3.00", txs: two}, "line 8: element Document/CstmrCdtTrfInitn/GrpHdr/CtrlSum", "GrpHdr/CtrlSum says 3.00, the file's amounts add up to 3.5"},
		{"PmtInf NbOfTxs", painDoc{pmtNb: "3", txs: two}, "line 13: element Document/CstmrCdtTrfInitn/PmtInf[1]/NbOfTxs", "PmtInf[1]/NbOfTxs says 3, PmtInf[1] has 2 CdtTrfTxInf"},
		{"PmtInf CtrlSum", painDoc{pmtSum: "0.01", txs: two}, "PmtInf[1]/CtrlSum", "PmtInf[1]/CtrlSum says 0.01, the amounts of PmtInf[1] add up to 3.5"},
		{"two PmtInf", painDoc{grpNb: "3", grpSum: "4.5", txs: two, morePmtInf: [][]painTx{{{id: "p3", amount: "1"}}}}, "", ""},
		{"two PmtInf, one missed", painDoc{grpNb: "2", txs: two, morePmtInf: [][]painTx{{{id: "p3", amount: "1"}}}}, "GrpHdr/NbOfTxs", "says 2, the file has 3 CdtTrfTxInf"},
		{"an amount CtrlSum cannot add", painDoc{grpSum: "3.5", txs: []painTx{{id: "p1", amount: "+1.5"}, {id: "p2", amount: "2"}}},
			"GrpHdr/CtrlSum", `GrpHdr/CtrlSum cannot be checked: the amount of PmtInf[1]/CdtTrfTxInf[1] ("+1.5") is not a plain decimal`},
		{"a CtrlSum that is not plain", painDoc{grpSum: "3.5e0", txs: two}, "GrpHdr/CtrlSum", "is not a valid DecimalNumber"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := decodePain(t, tt.doc.String())
			if tt.detail == "" {
				if err != nil || f.Declared != len(f.Requests) {
					t.Fatalf("%v; %+v", err, f)
				}
				return
			}
			wantRefusal(t, err, tt.where, tt.detail)
		})
	}
}

func TestPain001Times(t *testing.T) {
	t.Parallel()
	tests := []struct {
		version, date string
		want          time.Time
		bad           string // the detail of a bad line
	}{
		{"09", "<DtTm>2030-01-01T16:00:00+02:00</DtTm>", time.Date(2030, 1, 1, 14, 0, 0, 0, time.UTC), ""},
		{"09", "<DtTm>2030-01-01T16:00:00.123Z</DtTm>", time.Date(2030, 1, 1, 16, 0, 0, 123e6, time.UTC), ""},
		{"09", "<Dt>2030-01-01</Dt>", time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), ""},
		{"09", "<Dt>2030-01-01+01:00</Dt>", time.Date(2029, 12, 31, 23, 0, 0, 0, time.UTC), ""},
		{"03", "2030-01-01Z", time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), ""},
		{"09", "<DtTm>2030-01-01T16:00:00</DtTm>", time.Time{}, "no UTC offset"},
		{"09", "<DtTm>2030-01-01T24:00:00Z</DtTm>", time.Time{}, "want an ISO date-time with its offset"},
	}
	for _, tt := range tests {
		f, err := decodePain(t, painDoc{version: tt.version, date: tt.date}.String())
		switch {
		case err != nil:
			t.Errorf("%s: %v", tt.date, err)
		case tt.bad != "" && (len(f.Bad) != 1 || !strings.Contains(f.Bad[0].Fields[0].Detail, tt.bad)):
			t.Errorf("%s: got %+v, want a bad line with %q", tt.date, f.Bad, tt.bad)
		case tt.bad == "" && (len(f.Requests) != 1 || !f.Requests[0].RequestedExecutionTime.Equal(tt.want) || f.Requests[0].RequestedExecutionTime.Location() != time.UTC):
			t.Errorf("%s: got %+v, want %v", tt.date, f.Requests, tt.want)
		}
	}
}

// Only UTF-8 is read: a declaration of another encoding, a UTF-16 byte
// order mark, or bytes that are not UTF-8 refuse the file; a UTF-8 byte
// order mark and the spelling "utf8" are fine.
func TestPain001Encoding(t *testing.T) {
	t.Parallel()
	good := painDoc{}.String()
	body := strings.TrimPrefix(good, `<?xml version="1.0" encoding="UTF-8"?>`)
	tests := []struct {
		name, doc string
		detail    string // "" accepted
	}{
		{"no declaration", strings.TrimPrefix(body, "\n"), ""},
		{"utf-8", `<?xml version="1.0" encoding="utf-8"?>` + body, ""},
		{"utf8", `<?xml version="1.0" encoding="utf8"?>` + body, ""},
		{"a UTF-8 byte order mark", "\uFEFF" + good, ""},
		{"ISO-8859-1", `<?xml version="1.0" encoding="ISO-8859-1"?>` + body, `names the encoding "ISO-8859-1": only UTF-8 is accepted`},
		{"a UTF-16 byte order mark", "\xFF\xFE<\x00?\x00", "UTF-16 byte order mark: only UTF-8 is accepted"},
		{"UTF-16 without a mark", "\x00<\x00?\x00x", "NUL bytes, as UTF-16 or UTF-32 would: only UTF-8 is accepted"},
		{"Latin-1 bytes", strings.Replace(good, "Jane Doe", "Ren\xe9e Doe", 1), "the file is not valid UTF-8 (byte 0xE9)"},
		{"a cut sequence at the end", good + "\xc3", "the file ends inside a UTF-8 sequence"},
		{"invalid UTF-8 in a comment", strings.Replace(good, "<CstmrCdtTrfInitn>", "<!-- \xff --><CstmrCdtTrfInitn>", 1), "not valid UTF-8 (byte 0xFF)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := decodePain(t, tt.doc)
			if tt.detail == "" {
				if err != nil || len(f.Requests) != 1 {
					t.Fatalf("%v, %+v", err, f)
				}
				return
			}
			wantRefusal(t, err, "line", tt.detail)
		})
	}
}

// A huge text refuses the file before it is all read into memory.
func TestPain001HugeText(t *testing.T) {
	t.Parallel()
	good := painDoc{}.String()
	for _, size := range []int{70 << 10, 10 << 20} {
		doc := strings.Replace(good, "<Nm>Jane Doe</Nm>", "<Nm>"+strings.Repeat("x", size)+"</Nm>", 1)
		_, err := decodePain(t, doc)
		wantRefusal(t, err, "line", "bytes")
	}
}

// The xmllint cross-check: for every version, what libxml2 finds valid is
// accepted and what it finds invalid is refused.
func TestPain001AgreesWithXmllint(t *testing.T) {
	t.Parallel()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil && os.Getenv("CI") != "" {
		t.Fatal("xmllint not installed: .ci/run installs libxml2-utils")
	}
	if err != nil {
		t.Skip("xmllint not installed (apt-get install libxml2-utils): cross-check skipped")
	}
	dir := t.TempDir()
	// The README's example.
	if out, err := exec.Command(xmllint, "--noout", "--nonet", "--schema", filepath.Join("schemas", "pain.001.001.09.xsd"), filepath.Join("testdata", "pain001.xml")).CombinedOutput(); err != nil {
		t.Errorf("testdata/pain001.xml: %v\n%s", err, out)
	}
	valid, invalid := 0, 0
	for _, v := range versions {
		good := painDoc{version: v, txs: []painTx{{id: "p1", amount: "1"}, {id: "p2", amount: "2.00", extra: "\n<RmtInf><Ustrd>x</Ustrd></RmtInf>"}}}.String()
		docs := map[string]string{
			"good":        good,
			"misspelt":    strings.Replace(good, "<Cdtr>", "<Cdtor>", 1),
			"order":       strings.Replace(good, "<PmtMtd>TRF</PmtMtd>", "", 1) + "",
			"enum":        strings.Replace(good, "TRF", "trf", 1),
			"ccy":         strings.Replace(good, `Ccy="EUR"`, `Ccy="EURO"`, 1),
			"no ccy":      strings.Replace(good, ` Ccy="EUR"`, ``, 1),
			"digits":      strings.Replace(good, ">1</InstdAmt>", ">1.123456</InstdAmt>", 1),
			"total":       strings.Replace(good, ">1</InstdAmt>", ">1234567890123.12345</InstdAmt>", 1),
			"fraction ok": strings.Replace(good, ">1</InstdAmt>", ">1.12300</InstdAmt>", 1),
			"long":        strings.Replace(good, "<MsgId>MSG-1", "<MsgId>"+strings.Repeat("é", 36), 1),
			"35 chars":    strings.Replace(good, "<MsgId>MSG-1", "<MsgId>"+strings.Repeat("é", 30), 1),
			"date":        strings.Replace(good, "2030-01-01T10:00:00Z", "2030-13-01T10:00:00Z", 1),
			"leap":        strings.Replace(good, "2030-01-01T10:00:00Z", "2028-02-29T10:00:00.5+14:00", 1),
			"no leap":     strings.Replace(good, "2030-01-01T10:00:00Z", "2029-02-29T10:00:00", 1),
			"second":      strings.Replace(good, "</Document>\n", "</Document>\n<Document/>", 1),
			"spaces":      strings.Replace(good, ">1</InstdAmt>", "> 1 </InstdAmt>", 1),
			"iban":        strings.Replace(good, "DE89370400440532013000", "de89370400440532013000", 1),
			"splmtry":     strings.Replace(good, "</PmtInf>", "<SplmtryData><Envlp><anything xmlns='urn:x'><at all='1'/>text</anything></Envlp></SplmtryData></PmtInf>", 1),
			"empty envlp": strings.Replace(good, "</PmtInf>", "<SplmtryData><Envlp/></SplmtryData></PmtInf>", 1),
			"two envlp":   strings.Replace(good, "</PmtInf>", "<SplmtryData><Envlp><a/><b/></Envlp></SplmtryData></PmtInf>", 1),
		}
		for name, doc := range docs {
			if v == "03" && strings.Contains(name, "envlp") || v == "03" && name == "splmtry" {
				continue // 001.001.03 has no SplmtryData
			}
			path := filepath.Join(dir, v+"-"+strings.ReplaceAll(name, " ", "_")+".xml")
			if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			out, lintErr := exec.Command(xmllint, "--noout", "--nonet", "--schema", filepath.Join("schemas", "pain.001.001."+v+".xsd"), path).CombinedOutput()
			_, err := bulkfile.DecodePain001(context.Background(), bytes.NewReader([]byte(doc)))
			var refusal *bulkfile.FormatError
			refused := errors.As(err, &refusal)
			if err != nil && !refused {
				t.Errorf("%s %s: %v", v, name, err)
			}
			if refused != (lintErr != nil) {
				t.Errorf("%s %s: xmllint says %v (%s), DecodePain001 %v", v, name, lintErr, bytes.TrimSpace(out), err)
			}
			if refused {
				invalid++
			} else {
				valid++
			}
		}
	}
	if valid < 40 || invalid < 80 {
		t.Errorf("%d valid and %d invalid documents: the cross-check lost its cases", valid, invalid)
	}
}

func TestDecodeCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	csvFile := "paymentId,debtorAccount,amount,currency,creditorName,creditorIban,requestedExecutionTime\np,ACC,1.00,EUR,J,DE89370400440532013000,2030-01-01T00:00:00Z\n"
	for name, decode := range map[string]func() error{
		"pain.001":   func() error { _, err := bulkfile.DecodePain001(ctx, strings.NewReader(painDoc{}.String())); return err },
		"CSV":        func() error { _, err := bulkfile.DecodeCSV(ctx, strings.NewReader(csvFile)); return err },
		"JSON lines": func() error { _, err := bulkfile.DecodeJSONLines(ctx, strings.NewReader("{}\n"), 1024); return err },
	} {
		if err := decode(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", name, err)
		}
	}
}

// Every entry a file declares is accounted for, in every format: a
// payment or a bad line, never dropped.
func TestDeclaredAccounting(t *testing.T) {
	t.Parallel()
	const header = "paymentId,debtorAccount,amount,currency,creditorName,creditorIban,requestedExecutionTime\n"
	const row = "p%d,ACC,1.00,EUR,J,DE89370400440532013000,%s\n"
	good := `{"paymentId":"p","tenantId":"acme","debtorAccount":"ACC-1","amount":"1.00","currency":"EUR","creditor":{"name":"J","iban":"DE89370400440532013000"},"requestedExecutionTime":"2030-01-01T00:00:00Z"}`
	ctx := context.Background()
	tests := []struct {
		name                    string
		decode                  func() (bulkfile.File, error)
		declared, requests, bad int
	}{
		{"CSV", func() (bulkfile.File, error) {
			return bulkfile.DecodeCSV(ctx, strings.NewReader(header+fmt.Sprintf(row, 1, "2030-01-01T00:00:00Z")+fmt.Sprintf(row, 2, "soon")+"\n"+fmt.Sprintf(row, 3, "2030-01-01T00:00:00Z")))
		}, 3, 2, 1},
		{"JSON lines", func() (bulkfile.File, error) {
			return bulkfile.DecodeJSONLines(ctx, strings.NewReader(good+"\n\n{\"amount\":1}\n  \n"+good+"\nnot json\n"), 1024)
		}, 4, 2, 2},
		{"pain.001", func() (bulkfile.File, error) {
			doc := painDoc{txs: []painTx{{id: "p1", amount: "1"}, {id: "p2", amount: "2"}}, morePmtInf: [][]painTx{{{id: "p3", amount: "3"}}}}.String()
			doc = strings.Replace(doc, `<InstdAmt Ccy="EUR">2</InstdAmt>`, `<EqvtAmt><Amt Ccy="EUR">2</Amt><CcyOfTrf>USD</CcyOfTrf></EqvtAmt>`, 1)
			return bulkfile.DecodePain001(ctx, strings.NewReader(doc))
		}, 3, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := tt.decode()
			if err != nil {
				t.Fatal(err)
			}
			if f.Declared != tt.declared || len(f.Requests) != tt.requests || len(f.Bad) != tt.bad || len(f.Requests)+len(f.Bad) != f.Declared {
				t.Fatalf("declared %d, %d requests, %d bad; want %d, %d, %d", f.Declared, len(f.Requests), len(f.Bad), tt.declared, tt.requests, tt.bad)
			}
		})
	}
}

// TestPain001Priority: PmtTpInf/InstrPrty is the priority of the payments
// it covers: a payment information's (HIGH: HIGH), unless a transaction
// gives its own (NORM: NORMAL); a payment under neither names none (the
// file's priority, or NORMAL, is then its).
func TestPain001Priority(t *testing.T) {
	t.Parallel()
	prty := func(code string) string { return "<PmtTpInf><InstrPrty>" + code + "</InstrPrty></PmtTpInf>" }
	for _, v := range []string{"03", "09", "11"} {
		doc := painDoc{version: v, txs: []painTx{{id: "pay-1", amount: "1.00"}, {id: "pay-2", amount: "1.00"}},
			morePmtInf: [][]painTx{{{id: "pay-3", amount: "1.00"}, {id: "pay-4", amount: "1.00"}}}}.String()
		// The first payment information asks HIGH; pay-2 and pay-4 ask
		// for their own.
		doc = strings.Replace(doc, "<PmtMtd>TRF</PmtMtd>", "<PmtMtd>TRF</PmtMtd>"+prty("HIGH"), 1)
		for id, code := range map[string]string{"pay-2": "NORM", "pay-4": "HIGH"} {
			pmtID := "<PmtId><EndToEndId>" + id + "</EndToEndId></PmtId>"
			doc = strings.Replace(doc, pmtID, pmtID+prty(code), 1)
		}
		f, err := decodePain(t, doc)
		if err != nil || len(f.Bad) > 0 || len(f.Requests) != 4 {
			t.Fatalf("%s: %+v, %v", v, f, err)
		}
		var got []string
		for _, r := range f.Requests {
			got = append(got, r.PaymentID+"="+string(r.Priority))
		}
		if want := "pay-1=HIGH pay-2=NORMAL pay-3= pay-4=HIGH"; strings.Join(got, " ") != want {
			t.Errorf("%s: priorities %s, want %s", v, strings.Join(got, " "), want)
		}
	}
}
