package bulkfile_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/paydispatch/paydispatch/bulkfile"
	"github.com/paydispatch/paydispatch/internal/testkit/fuzzcost"
	"github.com/paydispatch/paydispatch/payment"
)

func TestDecodeCSV(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/payments.csv")
	if err != nil {
		t.Fatal(err)
	}
	f, err := bulkfile.DecodeCSV(context.Background(), bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2030, 1, 1, 16, 0, 0, 0, time.UTC)
	want := []payment.Request{
		{PaymentID: "pay-c1", TenantID: "acme", DebtorAccount: "ACC-1", Amount: "125.00", Currency: "EUR", RemittanceInfo: "INV-1",
			Creditor: payment.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"}, RequestedExecutionTime: at},
		{PaymentID: "pay-c2", TenantID: "acme", DebtorAccount: "ACC-1", Amount: "0.10", Currency: "EUR", RemittanceInfo: "INV-2, final",
			Creditor: payment.Creditor{Name: "Doe, John", IBAN: "DE89 3704 0044 0532 0130 00"}, RequestedExecutionTime: at},
	}
	if len(f.Requests) != 2 || f.Requests[0] != want[0] || f.Requests[1] != want[1] || f.Places[0] != 2 || f.Places[1] != 3 || f.Declared != 2 {
		t.Fatalf("got %+v at %v", f.Requests, f.Places)
	}

	header := "paymentId,debtorAccount,amount,currency,creditorName,creditorIban,requestedExecutionTime\n"
	tests := []struct {
		name, file, wantRefusal string
		wantBad                 int
	}{
		{"empty", "", "the file is empty", 0},
		{"two rows, one bad", header + "p,ACC,1.00,EUR,J,DE89370400440532013000,tomorrow\nq,ACC,1.00,EUR,J,DE89370400440532013000,2030-01-01T00:00:00Z\n", "", 1},
		{"header only", header, "no payments", 0},
		{"unknown column", "paymentId,amout\n", `unknown column "amout"`, 0},
		{"missing column", "paymentId,amount\n", "no debtorAccount column", 0},
		{"twice", strings.TrimSuffix(header, "\n") + ",amount\n", `"amount" appears twice`, 0},
		{"short row", header + "p,ACC,1.00\n", "line 2", 0},
		{"bad quote", header + "p,ACC,\"1.00,EUR,J,DE89370400440532013000,2030-01-01T00:00:00Z\n", "line 2", 0},
		{"bad time", header + "p,ACC,1.00,EUR,J,DE89370400440532013000,tomorrow\n", "", 1},
		{"bom", "\uFEFF" + header + "p,ACC,1.00,EUR,J,DE89370400440532013000,2030-01-01T00:00:00Z\n", "", 0},
		{"huge field", header + "p,ACC," + strings.Repeat("9", 5000) + ",EUR,J,DE89370400440532013000,2030-01-01T00:00:00Z\n", "over 1024 bytes", 0},
	}
	for _, tt := range tests {
		f, err := bulkfile.DecodeCSV(context.Background(), strings.NewReader(tt.file))
		var refusal *bulkfile.FormatError
		if tt.wantRefusal != "" {
			if !errors.As(err, &refusal) || !strings.Contains(err.Error(), tt.wantRefusal) {
				t.Errorf("%s: %v, want a refusal with %q", tt.name, err, tt.wantRefusal)
			}
			continue
		}
		if err != nil || len(f.Bad) != tt.wantBad {
			t.Errorf("%s: %v, %d bad (%+v), want %d", tt.name, err, len(f.Bad), f.Bad, tt.wantBad)
		}
		if err == nil && len(f.Requests)+len(f.Bad) != f.Declared {
			t.Errorf("%s: %d requests + %d bad, %d declared", tt.name, len(f.Requests), len(f.Bad), f.Declared)
		}
	}
}

func TestDecodePain001(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/pain001.xml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := bulkfile.DecodePain001(context.Background(), bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2030, 1, 1, 16, 0, 0, 0, time.UTC)
	want := []payment.Request{
		{PaymentID: "pay-x1", DebtorAccount: "ACC-1", Amount: "125.00", Currency: "EUR", RemittanceInfo: "INV-1",
			Creditor: payment.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"}, RequestedExecutionTime: at},
		{PaymentID: "pay-x2", DebtorAccount: "ACC-1", Amount: "0.1", Currency: "EUR",
			Creditor: payment.Creditor{Name: "John Doe", IBAN: "GB82WEST12345698765432"}, RequestedExecutionTime: at},
	}
	if len(f.Requests) != 2 || f.Requests[0] != want[0] || f.Requests[1] != want[1] || f.Places[1] != 2 || f.Declared != 2 {
		t.Fatalf("got %+v at %v", f.Requests, f.Places)
	}
	good := painDoc{}.String()
	tests := []struct {
		name, file, wantRefusal string
		wantBad                 int
	}{
		{"empty", "", "no XML element", 0},
		{"only a declaration", `<?xml version="1.0"?>` + "\n", "no XML element", 0},
		{"not xml", "paymentId,amount", "text \"paymentId,amount\" before the root element", 0},
		{"unclosed", strings.TrimSuffix(good, "</Document>\n"), "not well-formed XML", 0},
		{"another message", `<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pacs.008.001.09"><FIToFICstmrCdtTrf/></Document>`, "the file is a pacs.008 (FI to FI customer credit transfer), not a pain.001", 0},
		{"wrong namespace", `<Document xmlns="urn:example"><CstmrCdtTrfInitn/></Document>`, "namespace", 0},
		{"no transactions", strings.Replace(good, good[strings.Index(good, "<CdtTrfTxInf>"):strings.Index(good, "</CdtTrfTxInf>")+len("</CdtTrfTxInf>")], "", 1),
			"missing required element CdtTrfTxInf at the end of PmtInf", 0},
		{"no date", strings.Replace(good, "<ReqdExctnDt><DtTm>2030-01-01T16:00:00Z</DtTm></ReqdExctnDt>", "", 1), "missing required element ReqdExctnDt", 0},
		{"a bare date (001.001.03)", painDoc{version: "03"}.String(), "", 0},
		{"an equivalent amount", strings.Replace(good, `<InstdAmt Ccy="EUR">1.00</InstdAmt>`, `<EqvtAmt><Amt Ccy="EUR">1.00</Amt><CcyOfTrf>USD</CcyOfTrf></EqvtAmt>`, 1), "", 1},
		{"an entity", strings.Replace(good, "\n<Document", "\n<!DOCTYPE d [<!ENTITY x \"y\">]>\n<Document", 1), "DTD", 0},
		{"an undefined entity", strings.Replace(good, "Jane Doe", "&x;", 1), "not well-formed XML: invalid character entity &x;", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := bulkfile.DecodePain001(context.Background(), strings.NewReader(tt.file))
			var refusal *bulkfile.FormatError
			if tt.wantRefusal != "" {
				if !errors.As(err, &refusal) || !strings.Contains(err.Error(), tt.wantRefusal) {
					t.Fatalf("%v, want a refusal with %q", err, tt.wantRefusal)
				}
				return
			}
			if err != nil || len(f.Bad) != tt.wantBad || len(f.Requests)+len(f.Bad) != f.Declared {
				t.Fatalf("%v, %d bad (%+v), want %d; %d declared", err, len(f.Bad), f.Bad, tt.wantBad, f.Declared)
			}
		})
	}
}

// FuzzDecodeCSV, FuzzDecodePain001 and FuzzDecodeJSONLines: any input is
// decoded or refused, never a panic, at a cost linear in its size; every
// request has its place; every entry is accounted for; a refusal is a
// *FormatError.
func FuzzDecodeCSV(f *testing.F) {
	raw, _ := os.ReadFile("testdata/payments.csv")
	f.Add(raw)
	f.Add([]byte("paymentId,amount\n\"x"))
	f.Fuzz(func(t *testing.T, b []byte) { check(t, bulkfile.DecodeCSV, b) })
}

func FuzzDecodePain001(f *testing.F) {
	raw, _ := os.ReadFile("testdata/pain001.xml")
	f.Add(raw)
	f.Add([]byte(painDoc{version: "03", grpSum: "1"}.String()))
	f.Add([]byte(painDoc{version: "11", txs: []painTx{{id: "a", amount: "1"}, {id: "b", amount: "2"}}, pmtNb: "2"}.String()))
	// A Swiss variant with what it maps (Othr/Id, EqvtAmt, references),
	// and messages of other types.
	for _, name := range []string{"postfinance-musterfile-pain.001.001.03.ch.02.xml", "postfinance-musterfile-pain.008.001.02.ch.03.xml", "postfinance-pain.002.001.03.ch.02.xml"} {
		sample, _ := os.ReadFile(filepath.Join("testdata", "samples", name))
		f.Add(sample)
	}
	f.Add([]byte(`<Document xmlns="urn:example"><BkToCstmrStmt/></Document>`))
	// The schemas compile on first use: not part of any input's cost.
	_, _ = bulkfile.DecodePain001(context.Background(), bytes.NewReader(raw))
	f.Fuzz(func(t *testing.T, b []byte) { check(t, bulkfile.DecodePain001, b) })
}

func check(t *testing.T, decode func(context.Context, io.Reader) (bulkfile.File, error), b []byte) {
	t.Helper()
	var (
		file bulkfile.File
		err  error
	)
	fuzzcost.Default.Check(t, len(b), func() { file, err = decode(context.Background(), bytes.NewReader(b)) })
	if err != nil {
		var refusal *bulkfile.FormatError
		if !errors.As(err, &refusal) {
			t.Fatalf("a refusal that is not a *bulkfile.FormatError: %T %v", err, err)
		}
		return
	}
	if len(file.Requests) != len(file.Places) || len(file.Requests)+len(file.Bad) == 0 {
		t.Fatalf("%d requests, %d places, %d bad", len(file.Requests), len(file.Places), len(file.Bad))
	}
	if len(file.Requests)+len(file.Bad) != file.Declared {
		t.Fatalf("%d requests + %d bad, %d declared", len(file.Requests), len(file.Bad), file.Declared)
	}
	if file.Pain001 != nil {
		kept := 0
		for _, pi := range file.Pain001.PmtInfs {
			kept += len(pi.Txs)
		}
		if kept != file.Declared {
			t.Fatalf("the origin keeps %d transactions, %d declared", kept, file.Declared)
		}
	}
}

func TestDecodeJSONLines(t *testing.T) {
	t.Parallel()
	const good = `{"paymentId":"p-1","tenantId":"acme","debtorAccount":"ACC-1","amount":"1.00","currency":"EUR","creditor":{"name":"J","iban":"DE89370400440532013000"},"requestedExecutionTime":"2030-01-01T00:00:00Z"}`
	tests := []struct {
		name, file  string
		wantRefusal string
		wantPlaces  []int
		wantBad     map[int]string // line → field
	}{
		{"two payments and a blank line", good + "\n\n" + good + "\n", "", []int{1, 3}, nil},
		{"CRLF and no final newline", good + "\r\n" + good, "", []int{1, 2}, nil},
		{"a bad line among good", good + "\n{bad\n" + `{"amount":5}` + "\n" + good, "", []int{1, 4}, map[int]string{2: "line", 3: "amount"}},
		{"empty", "", "no payments", nil, nil},
		{"only blank lines", "\n \n\t\n", "no payments", nil, nil},
		{"a line too long", good + "\n" + `{"remittanceInfo":"` + strings.Repeat("x", 2000) + `"}`, "line 2: over 1024 bytes", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := bulkfile.DecodeJSONLines(context.Background(), strings.NewReader(tt.file), 1024)
			if tt.wantRefusal != "" {
				var refusal *bulkfile.FormatError
				if !errors.As(err, &refusal) || !strings.Contains(err.Error(), tt.wantRefusal) {
					t.Fatalf("%v, want a refusal with %q", err, tt.wantRefusal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Requests)+len(f.Bad) != f.Declared {
				t.Errorf("%d requests + %d bad, %d declared", len(f.Requests), len(f.Bad), f.Declared)
			}
			if fmt.Sprint(f.Places) != fmt.Sprint(tt.wantPlaces) {
				t.Errorf("places %v, want %v", f.Places, tt.wantPlaces)
			}
			bad := map[int]string{}
			for _, le := range f.Bad {
				bad[le.Line] = le.Fields[0].Field
			}
			if fmt.Sprint(bad) != fmt.Sprint(tt.wantBad) {
				t.Errorf("bad lines %v, want %v", bad, tt.wantBad)
			}
		})
	}
}

// A file of many blocks (decoded on every core) comes back in the file's
// order, each payment with its own line, bad lines and blank lines
// counted where they are.
func TestDecodeJSONLinesInOrder(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	var wantPlaces []int
	wantBad := map[int]bool{}
	line := 0
	for i := range 10_000 {
		line++
		switch {
		case i%997 == 0:
			b.WriteString("{bad\n")
			wantBad[line] = true
		case i%1009 == 0:
			b.WriteString("\n")
		default:
			fmt.Fprintf(&b, `{"paymentId":"p-%d","amount":"1.00"}`+"\n", line)
			wantPlaces = append(wantPlaces, line)
		}
	}
	f, err := bulkfile.DecodeJSONLines(context.Background(), strings.NewReader(b.String()), 1024)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(f.Places) != fmt.Sprint(wantPlaces) || len(f.Bad) != len(wantBad) || f.Declared != len(wantPlaces)+len(wantBad) {
		t.Fatalf("%d places, %d bad, %d declared; want %d, %d, %d", len(f.Places), len(f.Bad), f.Declared, len(wantPlaces), len(wantBad), len(wantPlaces)+len(wantBad))
	}
	for i, r := range f.Requests {
		if r.PaymentID != fmt.Sprintf("p-%d", f.Places[i]) {
			t.Fatalf("request %d is %s, on line %d", i, r.PaymentID, f.Places[i])
		}
	}
	for i, le := range f.Bad {
		if !wantBad[le.Line] || i > 0 && f.Bad[i-1].Line >= le.Line {
			t.Fatalf("bad lines out of place: %+v", f.Bad)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := bulkfile.DecodeJSONLines(ctx, strings.NewReader(b.String()), 1024); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled decode: %v", err)
	}
}

// A failed read (the body over its limit, a dropped connection) is
// returned as it is, not taken for a malformed file.
func TestDecodeJSONLinesReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	_, err := bulkfile.DecodeJSONLines(context.Background(), io.MultiReader(strings.NewReader("{}\n"), iotest.ErrReader(boom)), 1024)
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the read error", err)
	}
}

func FuzzDecodeJSONLines(f *testing.F) {
	f.Add([]byte("{\"paymentId\":\"a\",\"amount\":\"1\"}\n\n{bad\n\x00\xff\n" + `{"amount":"1","amount":"2"}`))
	f.Add([]byte("\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		check(t, func(ctx context.Context, r io.Reader) (bulkfile.File, error) {
			return bulkfile.DecodeJSONLines(ctx, r, 512)
		}, b)
	})
}

// TestRailColumn: a payment names its rail in a CSV file's optional rail
// column, or a JSON line's rail field; an empty one (or none) leaves the
// choice to the routing rules.
func TestRailColumn(t *testing.T) {
	t.Parallel()
	const line = `{"paymentId":"%s","debtorAccount":"ACC-1","amount":"1.00","currency":"EUR","creditor":{"name":"J","iban":"DE89370400440532013000"},"requestedExecutionTime":"2030-01-01T00:00:00Z"%s}`
	for _, tt := range []struct {
		name   string
		decode func() (bulkfile.File, error)
	}{
		{"CSV", func() (bulkfile.File, error) {
			return bulkfile.DecodeCSV(context.Background(), strings.NewReader(
				"paymentId,debtorAccount,amount,currency,creditorName,creditorIban,requestedExecutionTime,rail\n"+
					"p-1,ACC-1,1.00,EUR,J,DE89370400440532013000,2030-01-01T00:00:00Z, SEPA-INST\n"+
					"p-2,ACC-1,1.00,EUR,J,DE89370400440532013000,2030-01-01T00:00:00Z,\n"))
		}},
		{"JSON lines", func() (bulkfile.File, error) {
			return bulkfile.DecodeJSONLines(context.Background(), strings.NewReader(
				fmt.Sprintf(line, "p-1", `,"rail":"SEPA-INST"`)+"\n"+fmt.Sprintf(line, "p-2", "")+"\n"), 1024)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := tt.decode()
			if err != nil || len(f.Bad) > 0 || len(f.Requests) != 2 {
				t.Fatalf("%+v, %v", f, err)
			}
			if f.Requests[0].Rail != "SEPA-INST" || f.Requests[1].Rail != "" {
				t.Errorf("rails %q and %q, want SEPA-INST and none", f.Requests[0].Rail, f.Requests[1].Rail)
			}
		})
	}
}

// TestPriorityColumn: a payment names its priority in a CSV file's
// optional priority column, or a JSON line's priority field; an empty
// one (or none) leaves it to the file's, and a bad one is the line's to
// fix once checked.
func TestPriorityColumn(t *testing.T) {
	t.Parallel()
	const line = `{"paymentId":"%s","debtorAccount":"ACC-1","amount":"1.00","currency":"EUR","creditor":{"name":"J","iban":"DE89370400440532013000"},"requestedExecutionTime":"2030-01-01T00:00:00Z"%s}`
	for _, tt := range []struct {
		name   string
		decode func() (bulkfile.File, error)
	}{
		{"CSV", func() (bulkfile.File, error) {
			return bulkfile.DecodeCSV(context.Background(), strings.NewReader(
				"paymentId,debtorAccount,amount,currency,creditorName,creditorIban,requestedExecutionTime,priority\n"+
					"p-1,ACC-1,1.00,EUR,J,DE89370400440532013000,2030-01-01T00:00:00Z, HIGH\n"+
					"p-2,ACC-1,1.00,EUR,J,DE89370400440532013000,2030-01-01T00:00:00Z,\n"+
					"p-3,ACC-1,1.00,EUR,J,DE89370400440532013000,2030-01-01T00:00:00Z,URGENT\n"))
		}},
		{"JSON lines", func() (bulkfile.File, error) {
			return bulkfile.DecodeJSONLines(context.Background(), strings.NewReader(
				fmt.Sprintf(line, "p-1", `,"priority":"HIGH"`)+"\n"+fmt.Sprintf(line, "p-2", "")+"\n"+fmt.Sprintf(line, "p-3", `,"priority":"URGENT"`)+"\n"), 1024)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := tt.decode()
			if err != nil || len(f.Bad) > 0 || len(f.Requests) != 3 {
				t.Fatalf("%+v, %v", f, err)
			}
			if f.Requests[0].Priority != payment.PriorityHigh || f.Requests[1].Priority != "" {
				t.Errorf("priorities %q and %q, want HIGH and none", f.Requests[0].Priority, f.Requests[1].Priority)
			}
			for i := range f.Requests {
				f.Requests[i].TenantID = "acme"
			}
			les, err := (&payment.Service{}).CheckBatch(context.Background(), f.Requests, f.Places)
			if err != nil || len(les) != 1 || les[0].Line != f.Places[2] || les[0].Fields[0].Field != "priority" {
				t.Errorf("checked: %+v, %v; want line %d's priority", les, err, f.Places[2])
			}
		})
	}
}
