package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"go.temporal.io/sdk/worker"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/internal/testkit/temporaltest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
)

// swissSample is PostFinance's SPS sample (bulkfile/testdata/samples) as
// the bank would take it today: its NbOfTxs (7) corrected to its 8
// transactions and its execution dates moved to due, nothing else.
func swissSample(t *testing.T, due time.Time) string {
	t.Helper()
	raw, err := os.ReadFile("../bulkfile/testdata/samples/postfinance-musterfile-pain.001.001.03.ch.02.xml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(raw), "<NbOfTxs>7</NbOfTxs>", "<NbOfTxs>8</NbOfTxs>", 1)
	return regexp.MustCompile(`<ReqdExctnDt>2020-\d\d-\d\d</ReqdExctnDt>`).ReplaceAllString(s, "<ReqdExctnDt>"+due.Format(time.DateOnly)+"</ReqdExctnDt>")
}

// TestSwissFileStatusReport is the acceptance of issue 29's ISO part: a
// Swiss SPS pain.001 of five payment-information blocks goes in through
// POST /v1/payment-batches, on PostgreSQL and Temporal; each transaction
// is started or rejected with its reason; once Phase A has taken the
// started ones, GET /v1/payment-batches/{id}/status-report answers a
// pain.002 that names every block and transaction with its status and
// ISO reason code, and validates against the official pain.002.001.11
// schema (xmllint). A batch of another format has no report (409), an
// unknown one is 404.
func TestSwissFileStatusReport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	if err := payment.RegisterItemType(ctx, queue.New(pool)); err != nil {
		t.Fatal(err)
	}
	for _, iban := range []string{"CH0309000000250090342", "CH5109000000250092291"} {
		if _, _, err := account.Create(ctx, pool, account.Spec{AccountID: iban, TenantID: "acme", Currency: "CHF", OpeningBalance: decimal.NewFromInt(10_000)}); err != nil {
			t.Fatal(err)
		}
	}
	_, c := temporaltest.Start(t)
	w := worker.New(c, payment.InitTaskQueue, worker.Options{})
	payment.RegisterInit(w, payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: queue.New(pool)}))
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(pool), Queue: queue.New(pool), Temporal: c})
	rt := newRouter(t, httpapi.RouterConfig{Auth: fakeTokens{"admin": {TokenID: "a", Scopes: []auth.Scope{auth.Admin}}}, Services: httpapi.Services{Payments: svc}})
	do := func(method, path, ctype, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		req.Header.Set("Authorization", "Bearer admin")
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, req)
		return rec
	}

	due := time.Now().UTC().AddDate(0, 0, 7)
	rec := do("POST", "/v1/payment-batches?tenantId=acme", "application/xml", swissSample(t, due))
	var sub struct {
		BatchID    string              `json:"batchId"`
		Payments   int                 `json:"payments"`
		Declared   int                 `json:"declared"`
		Rejections []payment.LineError `json:"rejections"`
	}
	if rec.Code != 202 || json.Unmarshal(rec.Body.Bytes(), &sub) != nil {
		t.Fatalf("intake: %d %s", rec.Code, rec.Body)
	}
	var rejected []string
	for _, le := range sub.Rejections {
		for _, f := range le.Fields {
			rejected = append(rejected, strings.Join([]string{string(rune('0' + le.Line)), f.Field}, " "))
		}
	}
	// 2: a creditor account by Othr/Id; 5: an IBAN whose check digits
	// fail; 6: an equivalent amount in CHF to be sent in EUR.
	if want := "2 PmtInf[2]/CdtTrfTxInf[1]/CdtrAcct/Id/Othr/Id; 5 creditor.iban; 6 PmtInf[4]/CdtTrfTxInf[1]/Amt/EqvtAmt"; sub.Declared != 8 || sub.Payments != 5 ||
		strings.Join(rejected, "; ") != want {
		t.Fatalf("declared %d, started %d, rejected %q; want 8, 5, %q", sub.Declared, sub.Payments, strings.Join(rejected, "; "), want)
	}

	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		prog := do("GET", "/v1/payment-batches/"+sub.BatchID, "", "")
		if strings.Contains(prog.Body.String(), `"received":0,`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Phase A did not take the file: %s", prog.Body)
		}
	}
	rep := do("GET", "/v1/payment-batches/"+sub.BatchID+"/status-report", "", "")
	if rep.Code != 200 || !strings.HasPrefix(rep.Header().Get("Content-Type"), "application/xml") {
		t.Fatalf("status report: %d %s %s", rep.Code, rep.Header().Get("Content-Type"), rep.Body)
	}
	doc := rep.Body.String()
	flat := regexp.MustCompile(`>\s+<`).ReplaceAllString(doc, "><")
	for _, want := range []string{
		`<OrgnlMsgId>MsgId-001</OrgnlMsgId><OrgnlMsgNmId>pain.001.001.03.ch.02</OrgnlMsgNmId>`,
		`<OrgnlNbOfTxs>8</OrgnlNbOfTxs><OrgnlCtrlSum>38.00</OrgnlCtrlSum><GrpSts>PART</GrpSts>`,
		`<OrgnlPmtInfId>PmtInfId-01</OrgnlPmtInfId><PmtInfSts>ACCP</PmtInfSts>`,
		`<OrgnlPmtInfId>PmtInfId-02</OrgnlPmtInfId><PmtInfSts>PART</PmtInfSts>`,
		`<OrgnlPmtInfId>PmtInfId-03</OrgnlPmtInfId><PmtInfSts>PART</PmtInfSts>`,
		`<OrgnlPmtInfId>PmtInfId-04</OrgnlPmtInfId><PmtInfSts>RJCT</PmtInfSts>`,
		`<OrgnlPmtInfId>PmtInfId-05</OrgnlPmtInfId><PmtInfSts>ACCP</PmtInfSts>`,
		`<OrgnlInstrId>InstrId-01-01</OrgnlInstrId><OrgnlEndToEndId>EndToEndId-01-01</OrgnlEndToEndId><TxSts>ACCP</TxSts>`,
		`<OrgnlInstrId>InstrId-02-01</OrgnlInstrId><OrgnlEndToEndId>EndToEndId-02-01</OrgnlEndToEndId><TxSts>RJCT</TxSts><StsRsnInf><Rsn><Cd>AC01</Cd>`,
		`<OrgnlInstrId>InstrId-03-02</OrgnlInstrId><OrgnlEndToEndId>EndToEndId-03-02</OrgnlEndToEndId><TxSts>RJCT</TxSts><StsRsnInf><Rsn><Cd>AC01</Cd>`,
		`<OrgnlInstrId>InstrId-04-01</OrgnlInstrId><OrgnlEndToEndId>EndToEndId-04-01</OrgnlEndToEndId><TxSts>RJCT</TxSts><StsRsnInf><Rsn><Cd>AM03</Cd>`,
		`<OrgnlInstrId>InstrId-06-01</OrgnlInstrId><OrgnlEndToEndId>EEndToEndId-06-01</OrgnlEndToEndId><TxSts>ACCP</TxSts>`,
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("the report lacks %s", want)
		}
	}
	if t.Failed() {
		t.Fatal(doc)
	}
	xmllint(t, "../bulkfile/schemas/pain.002.001.11.xsd", doc)

	csv, err := os.ReadFile("../bulkfile/testdata/payments.csv")
	if err != nil {
		t.Fatal(err)
	}
	var csvSub struct {
		BatchID string `json:"batchId"`
	}
	if rec := do("POST", "/v1/payment-batches", "text/csv", string(csv)); rec.Code != 202 || json.Unmarshal(rec.Body.Bytes(), &csvSub) != nil {
		t.Fatalf("csv intake: %d %s", rec.Code, rec.Body)
	}
	if rec := do("GET", "/v1/payment-batches/"+csvSub.BatchID+"/status-report", "", ""); rec.Code != 409 || !strings.Contains(rec.Body.String(), "not sent as a pain.001 file") {
		t.Fatalf("a CSV batch's report: %d %s", rec.Code, rec.Body)
	}
	if rec := do("GET", "/v1/payment-batches/batch-nope/status-report", "", ""); rec.Code != 404 {
		t.Fatalf("an unknown batch's report: %d %s", rec.Code, rec.Body)
	}
}

// xmllint validates doc against an XSD with xmllint (Debian:
// libxml2-utils, which CI installs; a machine without it skips the check,
// CI fails).
func xmllint(t *testing.T, xsd, doc string) {
	t.Helper()
	bin, err := exec.LookPath("xmllint")
	if err != nil && os.Getenv("CI") != "" {
		t.Fatal("xmllint not installed: .ci/run installs libxml2-utils")
	}
	if err != nil {
		t.Skip("xmllint not installed (apt-get install libxml2-utils): XSD check skipped")
	}
	f := filepath.Join(t.TempDir(), "report.xml")
	if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "--noout", "--nonet", "--schema", xsd, f).CombinedOutput(); err != nil {
		t.Fatalf("xmllint: %v\n%s\n%s", err, out, doc)
	}
}
