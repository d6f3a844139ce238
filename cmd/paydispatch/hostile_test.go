package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/plaintext"
)

// TestHostileInput sends a running serve, as a hostile tenant would, the
// inputs an attack from outside found to cost too much, to lose payments,
// to break the intake's rules or to probe another tenant's ids, each
// alone and inside a bulk file of every format: each gets the answer the
// API reference names. Then it shows that they are cheap: other tenants'
// latency holds while they are sent concurrently, and the process spends
// next to no CPU on them, nor after their clients have gone. Every
// payment acknowledged is found and executed, the ledger check finds
// nothing, and serve stops within its drain limit with such requests in
// flight.
func TestHostileInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	// Not parallel: the CPU and latency it measures are serve's own.
	data, addr := dataDir(t), freeAddr(t)
	// A third of it (rolesShare) stops the roles and the private
	// PostgreSQL, whose shutdown checkpoint took over 2 s on a loaded
	// machine.
	const drain = 12 * time.Second
	p := startServeOn(t, data, addr, 0, "--shutdown-timeout", drain.String())
	h := &hostile{t: t, base: "http://" + addr}
	env := map[string]string{"PAYDISPATCH_DATA_DIR": data, "DATABASE_URL": ""}
	for _, tenant := range []string{"acme", "globex"} {
		code, tok, stderr := runCLI([]string{"token", "create", "--scopes", "payments:write,payments:read,accounts:write", "--tenant", tenant}, env)
		if code != 0 {
			t.Fatalf("token for %s: exit %d: %s", tenant, code, stderr)
		}
		h.tokens = append(h.tokens, strings.TrimSpace(tok))
	}
	acme, globex := h.tokens[0], h.tokens[1]
	for _, tok := range []string{acme, globex} {
		// The same account id in both tenants: two accounts.
		if r := h.do("POST", "/v1/accounts", tok, "application/json", `{"accountId":"ACC-1","currency":"EUR","balance":"100000.00"}`, nil); r.status != 201 {
			t.Fatalf("open ACC-1: %d %s", r.status, r.raw)
		}
	}
	h.due = time.Now().Add(20 * time.Second).UTC().Format(time.RFC3339)

	t.Run("one request each", func(t *testing.T) { h.t = t; h.singles(acme) })
	t.Run("inside bulk files", func(t *testing.T) { h.t = t; h.bulk(globex) })
	t.Run("pain.001 taken whole or refused", func(t *testing.T) { h.t = t; h.painFiles(acme) })
	t.Run("ids private to their tenant", func(t *testing.T) { h.t = t; h.ids(acme, globex) })
	t.Run("rails and their admin", func(t *testing.T) { h.t = t; h.rails(acme) })
	t.Run("HTTP as the standards say", func(t *testing.T) { h.t = t; h.http(acme, addr) })
	t.Run("other tenants' latency holds", func(t *testing.T) { h.t = t; h.latency(acme, globex) })
	t.Run("no CPU kept busy", func(t *testing.T) { h.t = t; h.cpu(globex, p.cmd.Process.Pid) })
	h.t = t

	// Everything acknowledged is there and executes; the ledger holds.
	waitUntil(t, 3*time.Minute, func() bool {
		for _, a := range h.acked {
			r := h.do("GET", "/v1/payments/"+a.id, a.token, "", "", nil)
			if r.status != 200 || r.json["status"] != "DELIVERED" {
				return false
			}
			if ref, _ := r.json["executionRef"].(string); !strings.HasPrefix(ref, "exec-payment-") && !strings.HasPrefix(ref, "exec-batch-payment-") {
				t.Errorf("%s: executionRef %q", a.id, ref)
			}
		}
		return true
	})
	t.Logf("%d payments acknowledged, every one DELIVERED", len(h.acked))
	verify(t, data)

	// serve stops within its drain limit with requests in flight that
	// will not finish: bodies that never come.
	for range 3 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /v1/payment-batches HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: text/csv\r\nContent-Length: 100000\r\n\r\npaymentId,", globex)
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("serve exited with %v:\n%s", err, p.stderr)
		}
	case <-time.After(drain + 30*time.Second):
		t.Fatalf("serve still running %v after SIGTERM", time.Since(start))
	}
	if took := time.Since(start); took > drain+20*time.Second || strings.Contains(p.stderr.String(), "http shutdown") {
		t.Fatalf("serve stopped in %v (drain limit %v):\n%s", took, drain, p.stderr)
	}
	t.Logf("serve stopped %v after SIGTERM (drain limit %v) with 3 requests in flight", time.Since(start).Round(time.Millisecond), drain)
}

type hostile struct {
	t      *testing.T
	base   string
	tokens []string
	due    string
	seq    int
	mu     sync.Mutex
	acked  []acked
}

type acked struct{ id, token string }

// hostileClient gives up on an answer after 10 s: a request that pins the
// server fails the test instead of hanging it.
var hostileClient = &http.Client{Timeout: 10 * time.Second}

type answer struct {
	status int
	raw    string
	json   map[string]any
	took   time.Duration
}

// do sends one request; a token of "" sends the admin token.
func (h *hostile) do(method, path, token, ctype, body string, hdr map[string]string) answer {
	h.t.Helper()
	req, err := http.NewRequest(method, h.base+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	if token == "" {
		token = e2eToken
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := hostileClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, raw: string(raw), took: time.Since(start)}
	_ = json.Unmarshal(raw, &a.json)
	if a.status >= 500 && a.status != 503 {
		h.t.Errorf("%s %s: %d %s", method, path, a.status, raw)
	}
	if a.status >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
		h.t.Errorf("%s %s: %d as %q, not problem+json", method, path, a.status, resp.Header.Get("Content-Type"))
	}
	return a
}

// fields are the fields a problem names, joined.
func (a answer) fields() string {
	var out []string
	errs, _ := a.json["errors"].([]any)
	for _, e := range errs {
		m, _ := e.(map[string]any)
		out = append(out, fmt.Sprint(m["field"]))
	}
	return strings.Join(out, ",")
}

// expect fails unless a has the status, names the field (when given) and
// says what (when given), in its detail or a field's detail.
func (h *hostile) expect(name string, a answer, status int, field, says string) {
	h.t.Helper()
	switch {
	case a.status != status:
		h.t.Errorf("%s: %d, want %d: %s", name, a.status, status, a.raw)
	case field != "" && !strings.Contains(a.fields(), field):
		h.t.Errorf("%s: names %q, want %q: %s", name, a.fields(), field, a.raw)
	case says != "" && !strings.Contains(a.raw, says):
		h.t.Errorf("%s: does not say %q: %s", name, says, a.raw)
	case a.took > 2*time.Second:
		h.t.Errorf("%s: answered in %v", name, a.took)
	}
}

// payment is a valid payment's JSON with one field's value replaced (raw
// JSON), and its id.
func (h *hostile) payment(field, value string) (string, string) {
	h.mu.Lock()
	h.seq++
	id := fmt.Sprintf("h-%04d", h.seq)
	h.mu.Unlock()
	v := map[string]string{"amount": `"1.00"`, "currency": `"EUR"`, "requestedExecutionTime": strconv.Quote(h.due)}
	if field != "" {
		v[field] = value
	}
	return id, fmt.Sprintf(`{"paymentId":%q,"debtorAccount":"ACC-1","amount":%s,"currency":%s,"creditor":{"name":"Jane Doe","iban":"DE89370400440532013000"},"requestedExecutionTime":%s}`,
		id, v["amount"], v["currency"], v["requestedExecutionTime"])
}

// attack is one hostile value of a payment's field, and what it is told.
type attack struct {
	name, field, value string // value is JSON
	status             int    // alone
	says               string
}

var paymentAttacks = []attack{
	{"exponent 1e2147483647", "amount", `"1e2147483647"`, 422, "no exponent"},
	{"exponent 1e10000000", "amount", `"1e10000000"`, 422, "no exponent"},
	{"exponent 1e3", "amount", `"1e3"`, 422, "no exponent"},
	{"exponent 1E3", "amount", `"1E3"`, 422, "no exponent"},
	{"exponent 1e-2", "amount", `"1e-2"`, 422, "no exponent"},
	{"a leading +", "amount", `"+5.00"`, 422, `no \"+\"`},
	{"a bare fraction", "amount", `".50"`, 422, "a digit before the point"},
	{"a trailing point", "amount", `"5."`, 422, "a digit after the point"},
	{"more decimals than EUR has", "amount", `"0.001"`, 422, "more decimals than EUR"},
	{"decimals in yen", "amount", `"100.50"`, 422, "more decimals than JPY"},
	{"a time without its offset", "requestedExecutionTime", `"2030-01-01T16:00:00"`, 400, "offset"},
	{"a time as a number", "requestedExecutionTime", `20300101`, 400, "requestedExecutionTime"},
	{"an amount as a number", "amount", `125.00`, 400, "amount"},
}

// attackBody is a payment's JSON with the attack's value.
func (h *hostile) attackBody(at attack) string {
	_, body := h.payment(at.field, at.value)
	if at.name == "decimals in yen" {
		body = strings.Replace(body, `"currency":"EUR"`, `"currency":"JPY"`, 1)
	}
	return body
}

func (h *hostile) singles(token string) {
	for _, at := range paymentAttacks {
		body := h.attackBody(at)
		h.expect(at.name, h.do("POST", "/v1/payments", token, "application/json", body, nil), at.status, at.field, at.says)
	}
	for _, bal := range []string{"1e2147483647", "1e10000000", "1e3", "+1.00", ".5", "0.001"} {
		a := h.do("POST", "/v1/accounts", token, "application/json", fmt.Sprintf(`{"accountId":"ACC-X","currency":"EUR","balance":%q}`, bal), nil)
		h.expect("balance "+bal, a, 422, "balance", "")
	}
	for _, rate := range []string{"1e2147483647", "1e-30", "1E3", "+1.1", ".9"} {
		a := h.do("POST", "/admin/fx-rates", "", "application/json", fmt.Sprintf(`{"base":"EUR","quote":"USD","rate":%q}`, rate), nil)
		h.expect("FX rate "+rate, a, 422, "rate", "not a plain decimal number")
	}
	h.expect("a slot at the zero time", h.do("POST", "/api/v1/slots", "", "application/json",
		`{"eventId":"e-1","configName":"default","requestedTime":"0001-01-01T00:00:00Z"}`, nil), 422, "requestedTime", "too far in the past")
	h.expect("slots at the zero time", h.do("POST", "/api/v1/slots/bulk", "", "application/json",
		`{"configName":"default","events":[{"eventId":"e-2","requestedTime":"0001-01-01T00:00:00Z"}]}`, nil), 422, "events[0].requestedTime", "too far in the past")
	h.expect("a body with a BOM", h.do("POST", "/v1/payments", token, "application/json", "\uFEFF{}", nil), 400, "", "byte order mark")
}

func (h *hostile) bulk(token string) {
	// A good payment first and last, each attack between: the good ones
	// start, each attack is rejected for its line, nothing is lost.
	type line struct {
		id, body string
		bad      bool
	}
	var lines []line
	add := func(field, value string, bad bool) {
		id, body := h.payment(field, value)
		lines = append(lines, line{id, body, bad})
	}
	add("", "", false)
	for _, at := range paymentAttacks {
		if at.name != "decimals in yen" {
			add(at.field, at.value, true)
		}
	}
	add("", "", false)

	var jsonl strings.Builder
	for _, l := range lines {
		jsonl.WriteString(l.body + "\n")
	}
	h.file("JSON lines", token, "application/x-ndjson", jsonl.String(), lines[0].id, lines[len(lines)-1].id, len(lines)-2)
	// A byte order mark before the first line: that line is rejected,
	// saying so.
	a := h.do("POST", "/v1/payment-batches", token, "application/x-ndjson", "\uFEFF"+jsonl.String(), nil)
	if a.status != 202 || a.json["rejected"] != float64(len(lines)-1) || !strings.Contains(a.raw, "byte order mark") {
		h.t.Errorf("JSON lines after a BOM: %d %s", a.status, a.raw)
	}

	// CSV carries the values as text: no JSON types to get wrong. Its
	// good payments pay 1.10, not the JSON file's 1.00: the same payments
	// again would be a duplicate file.
	var csv strings.Builder
	csv.WriteString("paymentId,debtorAccount,amount,currency,creditorName,creditorIban,requestedExecutionTime\n")
	var csvBad int
	var first, last string
	for i, at := range append([]attack{{}}, append(paymentAttacks, attack{})...) {
		h.mu.Lock()
		h.seq++
		id := fmt.Sprintf("h-%04d", h.seq)
		h.mu.Unlock()
		amount, at2, cur := "1.10", h.due, "EUR"
		v := strings.Trim(at.value, `"`)
		switch {
		case at.field == "amount" && strings.HasPrefix(at.value, `"`):
			amount = v
		case at.field == "requestedExecutionTime" && strings.HasPrefix(at.value, `"`):
			at2 = v
		case at.field != "":
			continue // a JSON type: CSV has none
		}
		if at.name == "decimals in yen" {
			cur = "JPY"
		}
		if at.field != "" {
			csvBad++
		}
		if i == 0 {
			first = id
		}
		last = id
		fmt.Fprintf(&csv, "%s,ACC-1,%s,%s,Jane Doe,DE89370400440532013000,%s\n", id, amount, cur, at2)
	}
	h.file("CSV", token, "text/csv", csv.String(), first, last, csvBad)

	// pain.001: an amount its schema does not take (an exponent) refuses
	// the file, naming the element and its line; one the schema takes but
	// the API does not (a "+", a bare fraction, a trailing point, more
	// decimals than the currency has) is rejected for its transaction.
	for _, amount := range []string{"1e2147483647", "1e10000000", "1e3", "1E3", "1e-2"} {
		doc := painDoc([]painTx{{h.nextID(), "1.00", "EUR"}, {h.nextID(), amount, "EUR"}}, h.due, "09", "")
		a := h.do("POST", "/v1/payment-batches", token, "application/xml", doc, nil)
		h.expect("pain.001 amount "+amount, a, 400, "line ", "InstdAmt")
	}
	first, last = h.nextID(), h.nextID()
	txs := []painTx{{first, "1.00", "EUR"}}
	for _, amount := range []string{"+5.00", ".50", "5.", "0.001"} {
		txs = append(txs, painTx{h.nextID(), amount, "EUR"})
	}
	txs = append(txs, painTx{h.nextID(), "100.50", "JPY"}, painTx{last, "2.00", "EUR"})
	h.file("pain.001", token, "application/xml", painDoc(txs, h.due, "09", ""), first, last, len(txs)-2)
}

// misspell renames the second transaction's element, as a typo would
// (CdtTrfTxlnf: an l for the I).
func misspell(doc string) string {
	i := strings.Index(doc, "<CdtTrfTxInf>")
	j := i + 1 + strings.Index(doc[i+1:], "<CdtTrfTxInf>")
	k := j + strings.Index(doc[j:], "</CdtTrfTxInf>")
	return doc[:j] + "<CdtTrfTxlnf>" + doc[j+len("<CdtTrfTxInf>"):k] + "</CdtTrfTxlnf>" + doc[k+len("</CdtTrfTxInf>"):]
}

func (h *hostile) nextID() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	return fmt.Sprintf("h-%04d", h.seq)
}

// file posts a bulk file whose payments first and last are good and bad
// others are bad: 202, each bad one rejected for its line, the counts
// adding up to what the file declares.
func (h *hostile) file(name, token, ctype, body, first, last string, bad int) {
	h.t.Helper()
	a := h.do("POST", "/v1/payment-batches", token, ctype, body, nil)
	if a.status != 202 {
		h.t.Errorf("%s: %d %s", name, a.status, a.raw)
		return
	}
	payments, rejected, declared := a.json["payments"].(float64), a.json["rejected"].(float64), a.json["declared"].(float64)
	good := 2
	if first == last {
		good = 1
	}
	if int(rejected) != bad || int(payments) != good || payments+rejected != declared {
		h.t.Errorf("%s: %v payments, %v rejected of %v declared; want %d and %d: %s", name, payments, rejected, declared, good, bad, a.raw)
	}
	for _, id := range slices.Compact([]string{first, last}) {
		h.acked = append(h.acked, acked{id, token})
	}
}

type painTx struct{ id, amount, ccy string }

// painDoc is a pain.001 document of the version with the transactions,
// due at due; extra is put inside CstmrCdtTrfInitn after the PmtInf.
func painDoc(txs []painTx, due, version, extra string) string {
	var b strings.Builder
	for _, tx := range txs {
		fmt.Fprintf(&b, `
      <CdtTrfTxInf>
        <PmtId><EndToEndId>%s</EndToEndId></PmtId>
        <Amt><InstdAmt Ccy="%s">%s</InstdAmt></Amt>
        <Cdtr><Nm>Jane Doe</Nm></Cdtr>
        <CdtrAcct><Id><IBAN>DE89370400440532013000</IBAN></Id></CdtrAcct>
      </CdtTrfTxInf>`, tx.id, tx.ccy, tx.amount)
	}
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.001.001.%s">
  <CstmrCdtTrfInitn>
    <GrpHdr>
      <MsgId>MSG-1</MsgId>
      <CreDtTm>2030-01-01T10:00:00Z</CreDtTm>
      <NbOfTxs>%d</NbOfTxs>
      <InitgPty><Nm>Acme Corp</Nm></InitgPty>
    </GrpHdr>
    <PmtInf>
      <PmtInfId>PMT-1</PmtInfId>
      <PmtMtd>TRF</PmtMtd>
      <ReqdExctnDt><DtTm>%s</DtTm></ReqdExctnDt>
      <Dbtr><Nm>Acme Corp</Nm></Dbtr>
      <DbtrAcct><Id><Othr><Id>ACC-1</Id></Othr></Id></DbtrAcct>
      <DbtrAgt><FinInstnId><BICFI>COBADEFFXXX</BICFI></FinInstnId></DbtrAgt>%s
    </PmtInf>%s
  </CstmrCdtTrfInitn>
</Document>
`, version, len(txs), due, b.String(), extra)
}

func (h *hostile) painFiles(token string) {
	one := func() []painTx { return []painTx{{h.nextID(), "1.00", "EUR"}} }
	two := func() []painTx { return []painTx{{h.nextID(), "1.00", "EUR"}, {h.nextID(), "2.00", "EUR"}} }
	for _, tt := range []struct {
		name, doc, says string
	}{
		{"a second Document appended", painDoc(one(), h.due, "09", "") + painDoc(one(), h.due, "09", ""), "not one pain.001 Document"},
		{"trailing garbage", painDoc(one(), h.due, "09", "") + "garbage", "not one pain.001 Document"},
		{"a misspelt transaction, NbOfTxs=2, CtrlSum=3.00", misspell(strings.Replace(painDoc(two(), h.due, "09", ""),
			"<NbOfTxs>2</NbOfTxs>", "<NbOfTxs>2</NbOfTxs><CtrlSum>3.00</CtrlSum>", 1)), "CdtTrfTxlnf"},
		{"NbOfTxs=5 with one transaction", strings.Replace(painDoc(one(), h.due, "09", ""), "<NbOfTxs>1</NbOfTxs>", "<NbOfTxs>5</NbOfTxs>", 1), "says 5"},
		{"a namespace not on the list", painDoc(one(), h.due, "99", ""), "pain.001.001.99"},
		{"UTF-16 declared", strings.Replace(painDoc(one(), h.due, "09", ""), `encoding="UTF-8"`, `encoding="UTF-16"`, 1), "UTF-8"},
	} {
		a := h.do("POST", "/v1/payment-batches", token, "application/xml", tt.doc, nil)
		h.expect(tt.name, a, 400, "", tt.says)
	}
	// A DtTm without its offset: every transaction of its PmtInf rejected.
	noTZ := strings.Replace(painDoc(one(), h.due, "09", ""), "<DtTm>"+h.due+"</DtTm>", "<DtTm>"+strings.TrimSuffix(h.due, "Z")+"</DtTm>", 1)
	a := h.do("POST", "/v1/payment-batches", token, "application/xml", noTZ, nil)
	h.expect("a DtTm without its offset", a, 422, "ReqdExctnDt", "offset")
}

func (h *hostile) ids(acme, globex string) {
	id, body := h.payment("", "")
	if a := h.do("POST", "/v1/payments", acme, "application/json", body, nil); a.status != 202 {
		h.t.Fatalf("acme's payment: %d %s", a.status, a.raw)
	}
	// The same id in another tenant: another payment, not a 409.
	theirs := strings.Replace(body, `"amount":"1.00"`, `"amount":"2.00"`, 1)
	if a := h.do("POST", "/v1/payments", globex, "application/json", theirs, nil); a.status != 202 {
		h.t.Errorf("globex's payment under acme's id: %d %s", a.status, a.raw)
	}
	h.acked = append(h.acked, acked{id, acme}, acked{id, globex})
	for tok, want := range map[string]string{acme: "1.00", globex: "2.00"} {
		if a := h.do("GET", "/v1/payments/"+id, tok, "", "", nil); a.status != 200 || a.json["amount"] != want {
			h.t.Errorf("GET %s: %d %s, want amount %s", id, a.status, a.raw, want)
		}
	}
	// The same id again within one tenant, another payment: 409.
	h.expect("an id used twice in a tenant", h.do("POST", "/v1/payments", acme, "application/json", theirs, nil), 409, "paymentId", "")
	// An operator who names no tenant is told to.
	h.expect("an id two tenants use, no tenant named", h.do("GET", "/v1/payments/"+id, "", "", "", nil), 409, "tenantId", "")
	if a := h.do("GET", "/v1/payments/"+id+"?tenantId=globex", "", "", "", nil); a.status != 200 || a.json["amount"] != "2.00" {
		h.t.Errorf("operator's GET with tenantId: %d %s", a.status, a.raw)
	}
	// Inside a file of every format, the same: acme's id is globex's to
	// use. The three files hold one payment: the second and third are
	// duplicates of the first, taken as allowed.
	for _, f := range []struct{ name, ctype, body string }{
		{"JSON lines", "application/x-ndjson", theirs + "\n"},
		{"CSV", "text/csv", "paymentId,debtorAccount,amount,currency,creditorName,creditorIban,requestedExecutionTime\n" +
			id + ",ACC-1,2.00,EUR,Jane Doe,DE89370400440532013000," + h.due + "\n"},
		{"pain.001", "application/xml", painDoc([]painTx{{id, "2.00", "EUR"}}, h.due, "09", "")},
	} {
		a := h.do("POST", "/v1/payment-batches?allowDuplicate=true", globex, f.ctype, f.body, nil)
		if a.status != 202 || a.json["payments"] != 1.0 || a.json["rejected"] != 0.0 {
			h.t.Errorf("a %s file of globex's with an id acme uses: %d %s", f.name, a.status, a.raw)
		}
	}
	// A tenant naming another tenant is refused, whether or not the id is
	// used there.
	h.expect("a tenant asking for another's", h.do("GET", "/v1/payments/"+id+"?tenantId=globex", acme, "", "", nil), 403, "tenantId", "")
	h.expect("a tenant asking for another's unknown id", h.do("GET", "/v1/payments/no-such-id?tenantId=globex", acme, "", "", nil), 403, "tenantId", "")
	if a := h.do("GET", "/v1/accounts/ACC-1", globex, "", "", nil); a.status != 200 || a.json["tenantId"] != "globex" {
		h.t.Errorf("globex's ACC-1: %d %s", a.status, a.raw)
	}
}

// rails sends the rail, calendar, routing and release routes what no
// rail, calendar, rule or selection can be, and a tenant's payments
// naming rails that are not there: each a 4xx naming the field, at once.
func (h *hostile) rails(tenant string) {
	admin := func(name, path, body string, status int, field, says string) {
		h.t.Helper()
		h.expect(name, h.do("POST", path, "", "application/json", body, nil), status, field, says)
	}
	admin("a NUL in a rail's name", "/admin/rails", `{"name":"a\u0000b","type":"SEPA_JSON"}`, 422, "name", "")
	admin("a rail's name of 10,000 bytes", "/admin/rails", `{"name":"`+strings.Repeat("x", 10000)+`","type":"SEPA_JSON"}`, 422, "name", "")
	admin("a time zone that is a path", "/admin/rails", `{"name":"R","type":"SEPA_JSON","timeZone":"../../../etc/passwd"}`, 422, "timeZone", "IANA")
	admin("the host's own zone", "/admin/rails", `{"name":"R","type":"SEPA_JSON","timeZone":"Local"}`, 422, "timeZone", "")
	admin("credentials in the endpoint", "/admin/rails", `{"name":"R","type":"SEPA_JSON","endpoint":"https://user:pw@rail.example"}`, 422, "endpoint", "credentials")
	admin("a fraction of a second", "/admin/rails", `{"name":"R","type":"SEPA_JSON","opens":"07:00:00.5"}`, 422, "opens", "")
	admin("past midnight", "/admin/rails", `{"name":"R","type":"SEPA_JSON","cutoff":"24:00:01"}`, 422, "cutoff", "")
	admin("a calendar of a built-in's name", "/admin/calendars", `{"name":"weekdays"}`, 409, "name", "built in")
	admin("a closing day in year 0", "/admin/calendars", `{"name":"C","closingDays":["0000-01-01"]}`, 422, "closingDays[0]", "")
	admin("a closing day past 9999", "/admin/calendars", `{"name":"C","closingDays":["10000-01-01"]}`, 422, "closingDays[0]", "")
	days := make([]string, 10001)
	for i := range days {
		days[i] = `"2030-01-01"`
	}
	admin("10,001 closing days", "/admin/calendars", `{"name":"C","closingDays":[`+strings.Join(days, ",")+`]}`, 422, "closingDays", "at most 10000")
	admin("a calendar over 1 MiB", "/admin/calendars", `{"name":"C","closingDays":["`+strings.Repeat("x", 1<<20)+`"]}`, 413, "", "")
	admin("an amount of a billion digits", "/admin/routing-rules", `{"rules":[{"minAmount":"1e2147483647","rail":"DEFAULT"}]}`, 422, "rules[0].minAmount", "no exponent")
	rules := make([]string, 1001)
	for i := range rules {
		rules[i] = `{"rail":"DEFAULT"}`
	}
	admin("1,001 rules", "/admin/routing-rules", `{"rules":[`+strings.Join(rules, ",")+`]}`, 422, "rules", "at most 1000")
	admin("a NUL in a tenant's cut-off rule", "/admin/cutoff-rules", `{"tenantId":"a\u0000","rule":"HOLD"}`, 422, "tenantId", "")
	admin("a NUL in a released file's id", "/admin/payments/release", `{"batchId":"b\u0000"}`, 422, "batchId", "")
	ids := make([]string, 10001)
	for i := range ids {
		ids[i] = fmt.Sprintf(`"p-%d"`, i)
	}
	admin("10,001 ids released", "/admin/payments/release", `{"tenantId":"acme","paymentIds":[`+strings.Join(ids, ",")+`]}`, 422, "paymentIds", "at most 10000")
	h.expect("a tenant's rail", h.do("POST", "/admin/rails", tenant, "application/json", `{"name":"MINE","type":"SEPA_JSON"}`, nil), 403, "", "scope")
	h.expect("a tenant's release", h.do("POST", "/admin/payments/release", tenant, "application/json", `{"tenantId":"acme"}`, nil), 403, "", "scope")

	for _, rail := range []string{`"GHOST"`, `"a\u0000b"`, `"` + strings.Repeat("r", 5000) + `"`} {
		_, body := h.payment("", "")
		body = strings.Replace(body, `"paymentId":`, `"rail":`+rail+`,"paymentId":`, 1)
		h.expect("a payment naming rail "+plaintext.Clip(rail, 16), h.do("POST", "/v1/payments", tenant, "application/json", body, nil), 422, "rail", "")
		a := h.do("POST", "/v1/payment-batches", tenant, "application/x-ndjson", body+"\n", nil)
		h.expect("a file's line naming rail "+plaintext.Clip(rail, 16), a, 422, "line 1: rail", "")
	}
	h.expect("a CSV line naming no rail there is", h.do("POST", "/v1/payment-batches", tenant, "text/csv",
		"paymentId,debtorAccount,amount,currency,creditorName,creditorIban,requestedExecutionTime,rail\n"+
			h.nextID()+",ACC-1,1.00,EUR,Jane Doe,DE89370400440532013000,"+h.due+",GHOST\n", nil), 422, "line 2: rail", "")
	h.expect("a list by a rail no rail can be", h.do("GET", "/v1/payments?rail=%3Cscript%3E", tenant, "", "", nil), 422, "rail", "")
	h.expect("a list by a rail with a NUL", h.do("GET", "/v1/payments?rail=%00", tenant, "", "", nil), 400, "rail", "")
	h.expect("a list of another tenant's rail", h.do("GET", "/v1/payments?tenantId=globex&rail=DEFAULT", tenant, "", "", nil), 403, "tenantId", "")
	h.expect("a rail's page, a name no rail can have", h.do("GET", "/admin/rails/"+strings.Repeat("x", 1000), "", "", "", nil), 404, "", "")
}

func (h *hostile) http(token, addr string) {
	// A declared length over the limit: 413 at once, before any body,
	// also to a client waiting for 100 Continue.
	for _, expect := range []string{"", "Expect: 100-continue\r\n"} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			h.t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /v1/payment-batches HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: text/csv\r\nContent-Length: 600000000\r\n%s\r\n", token, expect)
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		status, err := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if err != nil || !strings.Contains(status, " 413 ") {
			h.t.Errorf("600 MB declared (%q): %q, %v; want 413 at once", expect, status, err)
		}
	}
	_, body := h.payment("", "")
	h.expect("gzip", h.do("POST", "/v1/payments", token, "application/json", body, map[string]string{"Content-Encoding": "gzip"}), 415, "Content-Encoding", "")
	h.expect("no Content-Type", h.do("POST", "/v1/payments", token, "", body, nil), 415, "Content-Type", "")
	h.expect("a file with no Content-Type", h.do("POST", "/v1/payment-batches", token, "", body, nil), 415, "Content-Type", "")
	// A cursor is its list's: one from the audit log does not page the
	// FX rates.
	for _, pair := range []string{"GBP", "CHF"} {
		h.do("POST", "/admin/fx-rates", "", "application/json", fmt.Sprintf(`{"base":"EUR","quote":%q,"rate":"0.9"}`, pair), nil)
	}
	audit := h.do("GET", "/admin/audit?limit=1", "", "", "", nil)
	next, _ := audit.json["next"].(string)
	if next == "" {
		h.t.Fatalf("no next cursor from the audit log: %s", audit.raw)
	}
	h.expect("another list's cursor", h.do("GET", "/admin/fx-rates?cursor="+next, "", "", "", nil), 400, "cursor", "")
}

// latency times acme's payments alone, then while globex sends hostile
// inputs from four connections at once: acme's latency holds.
func (h *hostile) latency(victim, attacker string) {
	post := func() time.Duration {
		id, body := h.payment("", "")
		a := h.do("POST", "/v1/payments", victim, "application/json", body, nil)
		if a.status != 202 {
			h.t.Fatalf("victim's payment: %d %s", a.status, a.raw)
		}
		h.mu.Lock()
		h.acked = append(h.acked, acked{id, victim})
		h.mu.Unlock()
		return a.took
	}
	measure := func() (p50, p95 time.Duration) {
		var ds []time.Duration
		for range 30 {
			ds = append(ds, post())
			time.Sleep(50 * time.Millisecond)
		}
		slices.Sort(ds)
		return ds[len(ds)/2], ds[len(ds)*95/100]
	}
	base50, base95 := measure()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent, accepted sync.Map
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for ; ; n++ {
				select {
				case <-stop:
					sent.Store(w, n)
					return
				default:
				}
				body := h.attackBody(paymentAttacks[n%len(paymentAttacks)])
				var a answer
				if n%3 == 2 { // a bulk file of three such lines
					_, b2 := h.payment("amount", `"1e10000000"`)
					a = h.do("POST", "/v1/payment-batches", attacker, "application/x-ndjson", body+"\n"+b2+"\n"+body, nil)
				} else {
					a = h.do("POST", "/v1/payments", attacker, "application/json", body, nil)
				}
				if a.status < 400 {
					accepted.Store(a.raw, true)
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	under50, under95 := measure()
	close(stop)
	wg.Wait()
	total := 0
	sent.Range(func(_, v any) bool { total += v.(int); return true })
	accepted.Range(func(k, _ any) bool { h.t.Errorf("a hostile request was accepted: %s", k); return true })
	h.t.Logf("acme's payments alone: p50 %v, p95 %v; with %d hostile requests from 4 connections at once: p50 %v, p95 %v",
		base50.Round(time.Millisecond), base95.Round(time.Millisecond), total, under50.Round(time.Millisecond), under95.Round(time.Millisecond))
	if under95 > 4*base95+150*time.Millisecond {
		h.t.Errorf("acme's p95 went from %v to %v under the hostile requests", base95, under95)
	}
}

// cpu measures the CPU serve spends on the exponent inputs, alone and in
// files, against what it spends idle for as long; and what it spends once
// clients that gave up on such requests have gone.
func (h *hostile) cpu(token string, pid int) {
	idle := func(d time.Duration) time.Duration {
		before := cpuTime(h.t, pid)
		time.Sleep(d)
		return cpuTime(h.t, pid) - before
	}
	// Let the payments taken in so far through first: what is measured is
	// the process at rest, then the same with the hostile requests.
	for deadline := time.Now().Add(time.Minute); idle(time.Second) > 300*time.Millisecond && time.Now().Before(deadline); {
	}
	quiet := idle(3 * time.Second)
	before, start := cpuTime(h.t, pid), time.Now()
	for i := range 100 {
		value := []string{`"1e2147483647"`, `"1e10000000"`}[i%2]
		_, body := h.payment("amount", value)
		if i%4 == 3 {
			_, b2 := h.payment("amount", value)
			a := h.do("POST", "/v1/payment-batches", token, "application/x-ndjson", body+"\n"+b2+"\n", nil)
			h.expect("a file of exponents", a, 422, "amount", "no exponent")
			continue
		}
		h.expect("an exponent", h.do("POST", "/v1/payments", token, "application/json", body, nil), 422, "amount", "no exponent")
	}
	spent, took := cpuTime(h.t, pid)-before, time.Since(start)
	allowed := time.Duration(float64(quiet)*took.Seconds()/3) + 2*time.Second
	h.t.Logf("100 exponent requests in %v: serve spent %v of CPU (idle: %v in 3 s)", took.Round(time.Millisecond), spent.Round(time.Millisecond), quiet.Round(time.Millisecond))
	if spent > allowed {
		h.t.Errorf("serve spent %v of CPU on 100 exponent requests, over %v", spent, allowed)
	}
	// Clients that give up after 50 ms: nothing is left running.
	client := &http.Client{Timeout: 50 * time.Millisecond}
	for range 8 {
		_, body := h.payment("amount", `"1e2147483647"`)
		req, _ := http.NewRequest("POST", h.base+"/v1/payments", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	after := idle(3 * time.Second)
	h.t.Logf("the 3 s after 8 clients gave up: %v of CPU (idle: %v)", after.Round(time.Millisecond), quiet.Round(time.Millisecond))
	if after > quiet+time.Second {
		h.t.Errorf("serve spent %v of CPU in the 3 s after its clients left, against %v idle", after, quiet)
	}
}

// cpuTime is the CPU time (user and system) a process has spent.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command's closing parenthesis; utime and stime
	// are the 14th and 15th of the line, in clock ticks (100 a second).
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
