package bulkfile_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/bulkfile"
	"github.com/paydispatch/paydispatch/payment"
)

// TestStatusReportAwaitingApproval: a payment awaiting its approvals is
// pending (PDNG, TM01) in its file's pain.002, never rejected.
func TestStatusReportAwaitingApproval(t *testing.T) {
	t.Parallel()
	rep := payment.Pain001Report{
		BatchID: "batch-0123456789abcdef01234567",
		Origin: payment.Pain001Origin{MsgID: "MsgId-002", CreDtTm: "2026-01-01T10:00:00", MsgNmID: "pain.001.001.09", NbOfTxs: "1", CtrlSum: "10.00",
			PmtInfs: []payment.PmtInfOrigin{{PmtInfID: "P1", Txs: []payment.TxOrigin{{Place: 1, InstrID: "I1", EndToEndID: "E1", Key: "k1"}}}}},
		Outcomes: map[string]payment.Outcome{"k1": {Status: payment.StatusAwaitingApproval, Reason: "APPROVAL: 0 of 2 approvals (rule big)", Rail: "SEPA"}},
	}
	var b bytes.Buffer
	if err := bulkfile.StatusReport(&b, rep, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	flat := regexp.MustCompile(`>\s+<`).ReplaceAllString(b.String(), "><")
	if want := `<OrgnlEndToEndId>E1</OrgnlEndToEndId><TxSts>PDNG</TxSts><StsRsnInf><Rsn><Cd>TM01</Cd></Rsn><AddtlInf>AWAITING_APPROVAL: APPROVAL: 0 of 2`; !strings.Contains(flat, want) {
		t.Fatalf("the report lacks %q:\n%s", want, b.String())
	}
	validPain002(t, b.Bytes())
}
