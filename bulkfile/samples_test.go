package bulkfile_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/bulkfile"
)

// TestBankSamples: files banks and standards bodies wrote (testdata/samples,
// README.md there names each one's origin and licence) are read as what
// they say they are, and nothing more is promised: a pain.001 decodes with
// one entry per CdtTrfTxInf, every entry a request or a rejection, and
// its amounts add up to its CtrlSum; one whose own figures disagree with
// its transactions is refused naming the figure; a file of another
// message is refused naming that message.
func TestBankSamples(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file    string
		refused string // "" decodes; else part of the refusal
	}{
		{"iso20022-mdr-example-pain.001.001.03.xml", ""},
		{"lt-sepa_payment_naujas_1.xml", ""},
		{"lt-International_payment_USD_naujas_1.xml", ""},
		{"lt-International_payment_RUB_naujas_1.xml", ""},
		{"dvbern-pain.001.001.03.ch.02.xml", ""},
		// PostFinance's sample has 8 CdtTrfTxInf and says NbOfTxs 7.
		{"postfinance-musterfile-pain.001.001.03.ch.02.xml", "GrpHdr/NbOfTxs says 7, the file has 8 CdtTrfTxInf"},
		{"postfinance-musterfile-pain.008.001.02.ch.03.xml", "the file is a pain.008 (customer direct debit initiation), not a pain.001"},
		{"postfinance-pain.002.001.03.ch.02.xml", "the file is a pain.002 (customer payment status report), not a pain.001"},
		{"postfinance-camt.053.xml", "the file is a camt.053 (bank to customer statement), not a pain.001"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(filepath.Join("testdata", "samples", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			f, err := bulkfile.DecodePain001(context.Background(), bytes.NewReader(raw))
			if tt.refused != "" {
				var refusal *bulkfile.FormatError
				if !errors.As(err, &refusal) || !strings.Contains(refusal.Detail, tt.refused) {
					t.Fatalf("got %v; want a refusal with %q", err, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			txs := strings.Count(string(raw), "<CdtTrfTxInf>")
			if f.Declared != txs || len(f.Requests)+len(f.Bad) != txs {
				t.Fatalf("declared %d, %d requests + %d rejected; the file has %d CdtTrfTxInf", f.Declared, len(f.Requests), len(f.Bad), txs)
			}
			if got := originTxs(f); got != txs {
				t.Fatalf("the origin kept %d transactions, the file has %d", got, txs)
			}
			if sum := firstMatch(raw, `<GrpHdr>[\s\S]*?<CtrlSum>([^<]+)</CtrlSum>`); sum != "" {
				var total decimal.Decimal
				for _, m := range regexp.MustCompile(`<(?:InstdAmt|Amt) Ccy="[A-Z]{3}">([^<]+)<`).FindAllSubmatch(raw, -1) {
					total = total.Add(decimal.RequireFromString(string(m[1])))
				}
				if !total.Equal(decimal.RequireFromString(sum)) {
					t.Fatalf("the amounts add up to %s, CtrlSum says %s", total, sum)
				}
			}
		})
	}
}

func originTxs(f bulkfile.File) int {
	n := 0
	for _, pi := range f.Pain001.PmtInfs {
		n += len(pi.Txs)
	}
	return n
}

func firstMatch(raw []byte, re string) string {
	m := regexp.MustCompile(re).FindSubmatch(raw)
	if m == nil {
		return ""
	}
	return string(m[1])
}
