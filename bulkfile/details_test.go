package bulkfile_test

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/bulkfile"
	"github.com/paydispatch/paydispatch/internal/txdetail"
	"github.com/paydispatch/paydispatch/payment"
)

// TestCSVColumnsAreTheRequestFields: a CSV file may name every field of
// payment.Request as a column, derived from the type, and each column's
// value reaches its field: a field added to Request (or txdetail.Details)
// is a column without a change here. The columns documented before the
// derivation keep their names and order.
func TestCSVColumnsAreTheRequestFields(t *testing.T) {
	t.Parallel()
	documented := []string{"paymentId", "tenantId", "debtorAccount", "amount", "currency",
		"creditorName", "creditorIban", "creditorBic", "requestedExecutionTime", "remittanceInfo", "rail", "priority"}
	if len(bulkfile.CSVColumns) < len(documented) || !slices.Equal(bulkfile.CSVColumns[:len(documented)], documented) {
		t.Fatalf("columns %v, want %v first", bulkfile.CSVColumns, documented)
	}
	fields := payment.RequestFields()
	if len(fields) != len(bulkfile.CSVColumns) {
		t.Fatalf("%d columns for %d fields", len(bulkfile.CSVColumns), len(fields))
	}
	at := time.Date(2030, 1, 1, 16, 0, 0, 0, time.UTC)
	var want payment.Request
	row := make([]string, len(fields))
	for i, f := range fields {
		if f.IsTime() {
			row[i] = at.Format(time.RFC3339)
			f.SetTime(&want, at)
			continue
		}
		row[i] = "v-" + bulkfile.CSVColumns[i]
		f.Set(&want, row[i])
	}
	file := strings.Join(bulkfile.CSVColumns, ",") + "\n" + strings.Join(row, ",") + "\n"
	got, err := bulkfile.DecodeCSV(context.Background(), strings.NewReader(file))
	if err != nil || len(got.Requests) != 1 {
		t.Fatalf("DecodeCSV: %+v %v", got, err)
	}
	if got.Requests[0] != want {
		t.Fatalf("read %+v\nwant %+v", got.Requests[0], want)
	}
}

// detailElements are every detail with an ISO path as CdtTrfTxInf's
// elements, each holding its example (in declaration order, which must
// be the schema's among themselves).
func detailElements() (string, txdetail.Details) {
	var b strings.Builder
	var d txdetail.Details
	for _, f := range txdetail.Fields {
		if f.Path == nil {
			continue
		}
		f.Set(&d, f.Example())
		b.WriteString("<" + strings.Join(f.Path, "><") + ">" + f.Example())
		for i := len(f.Path) - 1; i >= 0; i-- {
			b.WriteString("</" + f.Path[i] + ">")
		}
	}
	return b.String(), d
}

// TestPain001ReadsEveryDetail: each detail is read from its ISO path in a
// transaction, without a change to the decoder.
func TestPain001ReadsEveryDetail(t *testing.T) {
	t.Parallel()
	elements, want := detailElements()
	for _, version := range []string{"03", "09"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			f, err := decodePain(t, painDoc{version: version, txs: []painTx{{id: "pay-1", amount: "1.00", extra: elements}}}.String())
			if err != nil || len(f.Requests) != 1 {
				t.Fatalf("decode: %+v %v", f, err)
			}
			if got := f.Requests[0].Details; got != want {
				t.Fatalf("details %+v, want %+v", got, want)
			}
		})
	}
}

// TestStatusReportEchoesDetails: a payment's details are echoed in its
// transaction's OrgnlTxRef, each at its ISO path in the schema's order,
// and the report stays valid.
func TestStatusReportEchoesDetails(t *testing.T) {
	t.Parallel()
	elements, d := detailElements()
	rep := payment.Pain001Report{
		BatchID: "batch-0123456789abcdef01234567",
		Origin: payment.Pain001Origin{MsgID: "M1", CreDtTm: "2026-01-01T10:00:00", MsgNmID: "pain.001.001.09",
			PmtInfs: []payment.PmtInfOrigin{{PmtInfID: "P1", Txs: []payment.TxOrigin{
				{Place: 1, EndToEndID: "E1", Key: "k1"}, {Place: 2, EndToEndID: "E2", Key: "k2"}}}}},
		Outcomes: map[string]payment.Outcome{
			"k1": {Status: payment.StatusScheduled, Rail: "SEPA", ExecutionDate: "2026-01-05", Details: d},
			"k2": {Status: payment.StatusScheduled, Details: d},
		},
	}
	var b bytes.Buffer
	if err := bulkfile.StatusReport(&b, rep, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	flat := regexp.MustCompile(`>\s+<`).ReplaceAllString(b.String(), "><")
	for _, want := range []string{
		`<OrgnlEndToEndId>E1</OrgnlEndToEndId><TxSts>ACCP</TxSts><StsRsnInf><AddtlInf>execution date 2026-01-05 on rail SEPA</AddtlInf></StsRsnInf><OrgnlTxRef><PmtTpInf><LclInstrm><Prtry>SEPA</Prtry></LclInstrm></PmtTpInf>` + elements + `</OrgnlTxRef>`,
		`<OrgnlEndToEndId>E2</OrgnlEndToEndId><TxSts>ACCP</TxSts>`,
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("the report lacks %q:\n%s", want, b.String())
		}
	}
	validPain002(t, b.Bytes())
	Xmllint(t, filepath.Join("schemas", "pain.002.001.11.xsd"), b.Bytes())
}
