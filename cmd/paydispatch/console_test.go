package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/demo"
	"github.com/paydispatch/paydispatch/console"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/railsim"
)

// TestConsoleInChromium drives the operator console in headless Chromium
// against serve, run in this process on a private stack, with the rail
// simulator beside it. The operator signs in with the admin token; creates
// two rate-limit configs and paces PAYMENT by one, in the console's
// forms; watches the rate chart move while a file of payments drains;
// stops dispatch with the kill switch (typing the item type to confirm)
// and sees it stop (the API says enabled=false, READY stays put), then
// resumes it; requeues, from the dead-letter table and through a config
// of its own, a payment the rail refused (RETURNED, an outbox dead
// letter) once the refusal is lifted at the rail, and sees it DELIVERED,
// received by the rail exactly once; looks that payment up with its
// process log and opens its execution in Temporal's Web UI. The rails
// panel shows each rail's backlog against its cut-off: DEFAULT's
// waiting payments while the file drains, and a rail whose projected
// finish is past its cut-off marked so. verify finds nothing. A
// screenshot of each step is written to $PAYDISPATCH_TEST_ARTIFACTS
// (default: a directory under the temporary directory, logged).
func TestConsoleInChromium(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a private stack and a browser")
	}
	browser := findChromium(t)
	artifacts := artifactDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Every wait ends by the test's deadline.
	deadline, _ := ctx.Deadline()
	within := func(d time.Duration) time.Duration { return min(d, time.Until(deadline)) }

	sim := railsim.New(railsim.Options{})
	simURL, stopSim, err := sim.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopSim)
	srv := startServeInProcess(t, map[string]string{"PAYDISPATCH_RAIL_URL": simURL})
	base := "http://" + srv.addr
	openAccount(t, srv.addr, "ACC-1", "acme", "100000.00")

	// The shell is public, under its policy; the figures are not.
	resp, err := http.Get(base + "/console")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("GET /console: %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 1000))...)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(allocCtx)
	defer cancelTab()
	steps := 0
	screenshot := func(name string) error {
		png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
		if err != nil {
			return err
		}
		steps++
		return os.WriteFile(filepath.Join(artifacts, fmt.Sprintf("%02d-%s.png", steps, name)), png, 0o644)
	}
	shot := func(name string) {
		t.Helper()
		if err := screenshot(name); err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
	}
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(tab, actions...); err != nil {
			if serr := screenshot("failed"); serr != nil {
				t.Logf("no screenshot of the failure: %v", serr)
			}
			t.Fatalf("%s: %v", what, err)
		}
	}
	// until waits for a JavaScript condition in the page.
	until := func(what, js string, limit time.Duration) {
		t.Helper()
		do(what, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(within(limit))))
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(tab, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	// submit clicks a form's submit button, as the operator does (the
	// console's script handles the submit event).
	submit := func(form string) chromedp.Action[chromedp.Void] {
		return chromedp.Click(chromedp.CSS(strings.TrimSpace(form) + ` button[type="submit"]`))
	}
	// confirm answers the console's confirmation dialog, its screenshot
	// named name; word is what it asks to be typed ("" for none).
	confirm := func(name, word string) {
		t.Helper()
		do("the confirmation dialog", chromedp.WaitVisible(chromedp.ID("confirm-ok")))
		if word != "" {
			if eval(`String(document.getElementById('confirm-ok').disabled)`) != "true" {
				t.Fatal("Confirm is enabled before the item type is typed")
			}
			do("type the confirmation", chromedp.SendKeys(chromedp.ID("confirm-input"), word))
		}
		shot(name)
		do("confirm", chromedp.Click(chromedp.ID("confirm-ok")), chromedp.WaitNotVisible(chromedp.ID("confirm")))
	}

	// 1. Sign in with the admin token.
	do("open the console", chromedp.Navigate(base+"/console"), chromedp.WaitVisible(chromedp.ID("sign-in-form")))
	if eval(`String(document.getElementById('app').hidden)`) != "true" {
		t.Fatal("the console shows itself before sign-in")
	}
	do("sign in", chromedp.SendKeys(chromedp.ID("token"), e2eToken), chromedp.SendKeys(chromedp.ID("operator"), "console-e2e"),
		submit("#sign-in-form"), chromedp.WaitVisible(chromedp.ID("app")))
	until("the live table", `document.querySelector('#item-types tr[data-item-type="PAYMENT"]') !== null`, 10*time.Second)
	if got := eval(`sessionStorage.getItem('paydispatch.console.token') + '|' + document.cookie`); got != e2eToken+"|" {
		t.Fatalf("after sign-in, sessionStorage and cookies: %q", got)
	}
	shot("signed-in")

	// 2. Two rate-limit configs, made in the console's form.
	for _, c := range []struct{ name, max string }{{"console-drain", "20"}, {"console-redrive", "5"}} {
		do("rate-limit config "+c.name, chromedp.SetValue(chromedp.ID("rl-name"), c.name), chromedp.SetValue(chromedp.ID("rl-max"), c.max),
			chromedp.SetValue(chromedp.ID("rl-window"), "PT1S"), submit("#rl-form"))
		until("config "+c.name+" listed", `document.querySelector('#rl-table tr[data-config="`+c.name+`"]') !== null`, 10*time.Second)
	}
	shot("rate-limits")

	// 3. PAYMENT paced by the first, its pre-start buffer short (so that
	// items wait READY until about their slot), edited in the console.
	form := `form.settings-form[data-item-type="PAYMENT"] `
	do("edit PAYMENT's settings", chromedp.WaitVisible(chromedp.CSS(form+`input[name="pacing_config"]`)),
		chromedp.SetValue(chromedp.CSS(form+`input[name="pacing_config"]`), "console-drain"),
		chromedp.SetValue(chromedp.CSS(form+`input[name="pre_start_buffer_secs"]`), "2"),
		chromedp.SetValue(chromedp.CSS(form+`input[name="paced_lead_ms"]`), "1000"),
		submit(form))
	until("settings saved", `(document.querySelector('`+form+`.result.ok') || {}).textContent?.startsWith('saved')`, 10*time.Second)
	var cfg struct {
		Enabled            bool
		PacingConfig       string `json:"pacing_config"`
		PreStartBufferSecs int    `json:"pre_start_buffer_secs"`
	}
	if err := json.Unmarshal([]byte(get(t, base+"/admin/dispatch/config/PAYMENT")), &cfg); err != nil ||
		cfg.PacingConfig != "console-drain" || cfg.PreStartBufferSecs != 2 || !cfg.Enabled {
		t.Fatalf("PAYMENT after the console's edit: %+v (%v)", cfg, err)
	}
	shot("settings")

	// 3b. The rails panel: a rail whose cut-off is two and a half minutes
	// away (in a zone where it is midday, so that it falls today), paced
	// by a config of its own at one a second, and five payments waiting
	// for it. Its config lowered to one a minute, what waits would leave
	// at about now + 5 min, past the cut-off: the panel marks the rail,
	// with a negative margin, beside DEFAULT. The five are then cancelled.
	zone := demo.MiddayZone(time.Now())
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	lateConfig := func(window string) {
		t.Helper()
		var v any
		if code := postJSON(t, base+"/admin/rate-limit/config", "application/json",
			`{"configName":"console-late","maxPerWindow":1,"windowSize":"`+window+`"}`, &v); code != http.StatusOK && code != http.StatusCreated {
			t.Fatalf("config console-late: %d %v", code, v)
		}
	}
	lateConfig("PT1S")
	var v any
	if code := postJSON(t, base+"/admin/rails", "application/json", fmt.Sprintf(`{"name":"CONSOLE-LATE","type":"SEPA_JSON","rateLimitConfig":"console-late",`+
		`"timeZone":%q,"cutoff":%q}`, zone, time.Now().Add(150*time.Second).In(loc).Format("15:04:05")), &v); code != http.StatusCreated {
		t.Fatalf("the rail: %d %v", code, v)
	}
	lateAt := time.Now().Add(100 * time.Second).UTC().Truncate(time.Second).Format(time.RFC3339)
	for i := range 5 {
		body := fmt.Sprintf(`{"paymentId":"late-%d","tenantId":"acme","debtorAccount":"ACC-1","amount":"10.00","currency":"EUR","rail":"CONSOLE-LATE",`+
			`"creditor":{"name":"Jane Doe","iban":"DE89370400440532013000"},"requestedExecutionTime":%q}`, i, lateAt)
		if r := postRetrying(t, base+"/v1/payments", "application/json", body); r.StatusCode != http.StatusAccepted {
			t.Fatalf("payment late-%d: %d", i, r.StatusCode)
		}
	}
	var lateRail httpapi.RailStatus
	waitUntil(t, within(20*time.Second), func() bool {
		lateRail = httpapi.RailStatus{}
		return json.Unmarshal([]byte(get(t, base+"/admin/rails/CONSOLE-LATE")), &lateRail) == nil && lateRail.Backlog.Waiting == 5
	})
	lateConfig("PT60S")
	lateRow := `#rails tr[data-rail="CONSOLE-LATE"]`
	until("the late rail marked past its cut-off", `(document.querySelector('`+lateRow+`') || {dataset: {}}).dataset.pastCutoff === 'true'`, 10*time.Second)
	if err := json.Unmarshal([]byte(get(t, base+"/admin/rails/CONSOLE-LATE")), &lateRail); err != nil || lateRail.BusinessDay == nil ||
		lateRail.BusinessDay.Cutoff == nil || !lateRail.BusinessDay.PastCutoff {
		t.Fatalf("the rail through the API: %+v (%v)", lateRail, err)
	}
	cell := func(row, col string) string {
		return eval(`document.querySelector('` + row + ` td[data-col="` + col + `"]').textContent`)
	}
	if got, want := cell(lateRow, "cutoff"), strings.Replace(lateRail.BusinessDay.Cutoff.Format(time.RFC3339), "T", " ", 1); got != want {
		t.Errorf("the panel's cut-off %q, the API's %q", got, want)
	}
	if got := cell(lateRow, "waiting") + "|" + cell(lateRow, "rate") + "|" + cell(lateRow, "type"); got != "5|0.02|SEPA_JSON" {
		t.Errorf("the late rail's waiting, limit and type: %q", got)
	}
	if m := cell(lateRow, "margin"); !strings.HasPrefix(m, "−") || !strings.HasSuffix(m, " s") {
		t.Errorf("the late rail's margin %q, want a negative one", m)
	}
	if eval(`document.querySelector('#rails tr[data-rail="DEFAULT"]').dataset.pastCutoff + '|' + document.querySelector('#rails tr[data-rail="DEFAULT"] td[data-col="cutoff"]').textContent`) != "false|— (none)" {
		t.Error("DEFAULT's row is not shown as a rail without a cut-off")
	}
	shot("rails")
	for i := range 5 {
		var c any
		if code := postJSON(t, fmt.Sprintf("%s/v1/payments/late-%d/cancel?tenantId=acme", base, i), "application/json", "", &c); code != http.StatusOK {
			t.Fatalf("cancel late-%d: %d %v", i, code, c)
		}
	}

	// 4. A payment the rail will refuse, and a file of 600 due at one
	// instant, paced at 20 a second: 30 s of drain, so that plenty is
	// still READY when the kill switch flips, however slow the browser.
	const n = 600
	instant := time.Now().Add(6 * time.Second).UTC().Truncate(time.Second).Format(time.RFC3339)
	pay := func(id, remittance string) string {
		return fmt.Sprintf(`{"paymentId":%q,"tenantId":"acme","debtorAccount":"ACC-1","amount":"10.00","currency":"EUR",`+
			`"creditor":{"name":"Jane Doe","iban":"DE89370400440532013000"},"requestedExecutionTime":%q,"remittanceInfo":%q}`, id, instant, remittance)
	}
	if r := postRetrying(t, base+"/v1/payments", "application/json", pay("c-refused", "RAIL-REJECT:AC04")); r.StatusCode != http.StatusAccepted {
		t.Fatalf("the refused payment: %d", r.StatusCode)
	}
	var file strings.Builder
	for i := range n {
		file.WriteString(pay(fmt.Sprintf("c-%03d", i), "INV-CONSOLE") + "\n")
	}
	var sub struct{ BatchID string }
	if code := postJSON(t, base+"/v1/payment-batches", "application/x-ndjson", file.String(), &sub); code != http.StatusAccepted {
		t.Fatalf("the file: %d", code)
	}

	// 5. The rate chart moves as the payments drain.
	stats := func() console.ItemTypeStats {
		t.Helper()
		var st console.Stats
		if err := json.Unmarshal([]byte(get(t, base+"/admin/console/stats")), &st); err != nil {
			t.Fatal(err)
		}
		for _, it := range st.ItemTypes {
			if it.ItemType == "PAYMENT" {
				return it
			}
		}
		t.Fatalf("no PAYMENT in %+v", st)
		return console.ItemTypeStats{}
	}
	// The rate line's points and how many samples it draws: new samples,
	// with rates that differ (executions a second going up and down
	// around the limit), not a flat line shifting left.
	chart := `(() => { const c = document.getElementById('rate-chart');
		const pts = c.querySelector('polyline[data-series="rate"]').getAttribute('points');
		const ys = new Set(pts.split(' ').filter(Boolean).map((p) => p.split(',')[1]));
		return JSON.stringify({samples: Number(c.getAttribute('data-samples')), last: Number(c.getAttribute('data-last')), distinct: ys.size, points: pts}); })()`
	type rateChart struct {
		Samples, Distinct int
		Last              float64
		Points            string
	}
	read := func() rateChart {
		var c rateChart
		if err := json.Unmarshal([]byte(eval(chart)), &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	until("executions on the rate chart", `Number(document.getElementById('rate-chart').getAttribute('data-last')) > 0`, 40*time.Second)
	first := read()
	until("the rate chart moving", `(() => { const c = JSON.parse(`+chart+`); return c.samples >= `+fmt.Sprint(first.Samples+3)+` && c.distinct >= 3; })()`, 15*time.Second)
	if moved := read(); moved.Points == first.Points || moved.Samples <= first.Samples {
		t.Fatalf("the rate chart did not move: %+v then %+v", first, moved)
	}
	if limit := eval(`document.querySelector('#rate-chart polyline[data-series="limit"]').getAttribute('points')`); limit == "" {
		t.Fatal("no limit line on the rate chart")
	}
	if eval(`document.querySelector('#queue-chart polyline[data-series="READY"]').getAttribute('points')`) == "" {
		t.Fatal("no READY line on the queue chart")
	}
	until("DEFAULT's waiting payments in the rails panel",
		`Number(document.querySelector('#rails tr[data-rail="DEFAULT"] td[data-col="waiting"]').textContent.replace(/,/g, '')) > 0`, 10*time.Second)
	shot("draining")

	// 6. The kill switch, confirmed: dispatch stops.
	waitUntil(t, within(30*time.Second), func() bool { it := stats(); return it.Completed >= 20 })
	if it := stats(); it.Queue["READY"] < 100 {
		t.Fatalf("only %d READY when the kill switch is to be flipped: the test cannot see dispatch stop", it.Queue["READY"])
	}
	do("the kill switch", chromedp.Click(chromedp.CSS(`#item-types tr[data-item-type="PAYMENT"] button.kill`)))
	confirm("kill-switch-confirm", "PAYMENT")
	until("dispatch shown stopped", `document.querySelector('#item-types tr[data-item-type="PAYMENT"]').dataset.enabled === 'false'`, 10*time.Second)
	if err := json.Unmarshal([]byte(get(t, base+"/admin/dispatch/config/PAYMENT")), &cfg); err != nil || cfg.Enabled {
		t.Fatalf("the API after the kill switch: %+v (%v)", cfg, err)
	}
	// A cycle under way when it flipped may still claim: READY settles.
	stopped := stats().Queue["READY"]
	for settled := time.Now().Add(15 * time.Second); ; stopped = stats().Queue["READY"] {
		time.Sleep(1500 * time.Millisecond)
		if stats().Queue["READY"] == stopped {
			break
		}
		if time.Now().After(settled) {
			t.Fatal("READY still falling 15 s after the kill switch")
		}
	}
	for range 6 {
		time.Sleep(time.Second)
		if it := stats(); it.Queue["READY"] != stopped {
			t.Fatalf("READY went from %d to %d with dispatch stopped", stopped, it.Queue["READY"])
		}
	}
	if stopped == 0 {
		t.Fatal("nothing was left READY to hold")
	}
	t.Logf("dispatch stopped: %d READY held for 6 s", stopped)
	shot("stopped")

	do("resume", chromedp.Click(chromedp.CSS(`#item-types tr[data-item-type="PAYMENT"] button.kill`)))
	confirm("resume-confirm", "")
	until("dispatch shown resumed", `document.querySelector('#item-types tr[data-item-type="PAYMENT"]').dataset.enabled === 'true'`, 10*time.Second)
	waitUntil(t, within(20*time.Second), func() bool { return stats().Queue["READY"] < stopped })

	// 7. The refused payment: RETURNED, an outbox dead letter. The refusal
	// is lifted at the rail, and the operator requeues it.
	refused := payment.Key("acme", "c-refused")
	waitUntil(t, within(30*time.Second), func() bool { return paymentStatus(t, base, "c-refused") == "RETURNED" })
	if !sim.Lift(refused) {
		t.Fatal("the rail had no refusal to lift")
	}
	row := `#dl-table tr[data-item-id="` + refused + `"]`
	do("list the dead letters", submit("#dl-filter"))
	until("the refused payment's dead letter", `document.querySelector('`+row+`') !== null`, 10*time.Second)
	do("requeue it", chromedp.Click(chromedp.CSS(row+` input.dl-pick`)), chromedp.SetValue(chromedp.ID("dl-config"), "console-redrive"),
		chromedp.SetValue(chromedp.ID("dl-requeue-reason"), "account reopened at the rail"), submit("#dl-requeue"))
	confirm("requeue-confirm", "")
	until("requeued", `document.getElementById('dl-result').textContent.startsWith('requeued 1 through console-redrive')`, 10*time.Second)
	shot("requeued")
	waitUntil(t, within(30*time.Second), func() bool { return paymentStatus(t, base, "c-refused") == "DELIVERED" })

	// Everything drains; the rail received each payment once.
	waitUntil(t, within(90*time.Second), func() bool {
		var v struct{ Progress struct{ Delivered int } }
		_ = json.Unmarshal([]byte(get(t, base+"/v1/payment-batches/"+sub.BatchID)), &v)
		return v.Progress.Delivered == n
	})
	var l railsim.LedgerView
	getLedger(t, simURL, &l)
	if l.Unique != n+1 || l.Received != n+1 || l.Duplicates != 0 || l.Refused != 1 {
		t.Fatalf("the rail's ledger %+v, want %d received once each, the one refusal before the lift", l, n+1)
	}
	if _, ok := sim.ReceivedAt(refused); !ok {
		t.Fatal("the rail has not accepted the requeued payment")
	}
	// /metrics serves the dispatcher's registry, which the console reads,
	// beside the rest.
	metrics := get(t, base+"/metrics")
	for _, want := range []string{console.ExecutionsMetric + `_count{item_type="PAYMENT"}`, "paydispatch_queue_depth{", "go_goroutines "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// 8. The payment looked up, with its process log and its execution's
	// page in Temporal's Web UI.
	do("look the payment up", chromedp.SetValue(chromedp.ID("pay-id"), "c-refused"), chromedp.SetValue(chromedp.ID("pay-tenant"), "acme"),
		submit("#pay-form"), chromedp.WaitVisible(chromedp.ID("pay-view")))
	until("its process log", `document.querySelectorAll('#proc-log tbody tr').length > 0 && document.querySelector('#pay-fields dd[data-field="status"]').textContent === 'DELIVERED'`, 10*time.Second)
	shot("payment")
	link := eval(`document.getElementById('pay-temporal-link').href`)
	var view struct {
		ExecutionRef string
		Links        struct{ TemporalUI string }
	}
	if err := json.Unmarshal([]byte(get(t, base+"/v1/payments/c-refused?tenantId=acme")), &view); err != nil || view.Links.TemporalUI == "" || link != view.Links.TemporalUI {
		t.Fatalf("the console links %q; the API %+v (%v)", link, view, err)
	}
	workflowID, _, _ := strings.Cut(view.ExecutionRef, "/")

	// Signing out forgets the token and what was read with it.
	do("sign out", chromedp.Click(chromedp.ID("sign-out")), chromedp.WaitVisible(chromedp.ID("sign-in-form")))
	if got := eval(`String(sessionStorage.getItem('paydispatch.console.token')) + '|' + document.querySelectorAll('#proc-log tbody tr, #item-types tbody tr').length`); got != "null|0" {
		t.Fatalf("after sign-out: %q", got)
	}

	do("open the execution in Temporal's Web UI", chromedp.Navigate(link))
	until("Temporal's Web UI shows the execution", `document.body && document.body.innerText.includes(`+jsString(workflowID)+`)`, 45*time.Second)
	shot("temporal-ui")

	vs, err := payment.Verify(context.Background(), srv.store.Pool)
	if err != nil || len(vs) > 0 {
		t.Fatalf("verify: %v %+v", err, vs)
	}
	t.Logf("%d steps, screenshots in %s", steps, artifacts)
}

// jsString quotes s as a JavaScript string.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func paymentStatus(t *testing.T, base, id string) string {
	t.Helper()
	var v struct{ Status string }
	_ = json.Unmarshal([]byte(get(t, base+"/v1/payments/"+id+"?tenantId=acme")), &v)
	return v.Status
}

// artifactDir is where a browser test writes its screenshots:
// $PAYDISPATCH_TEST_ARTIFACTS, or a new directory under the temporary
// directory. It is logged, and kept.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("PAYDISPATCH_TEST_ARTIFACTS")
	var err error
	if dir == "" {
		dir, err = os.MkdirTemp("", "paydispatch-"+t.Name()+"-")
	} else {
		dir = filepath.Join(dir, t.Name())
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// findChromium is Debian's chromium, found as the demo's report test (cmd/paydispatch/internal/demo)
// finds it: without it the test is skipped on a developer's machine and
// fails in CI (.ci/run installs it).
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium: .ci/run installs Debian's chromium (apt-get install chromium)")
	}
	t.Skip("no chromium on this machine: apt-get install chromium")
	return ""
}

// startServeInProcess runs serve's stack in this process, as the demo
// does: a private PostgreSQL in a new data directory, the embedded
// Temporal and its Web UI on free ports, the API on a free port with
// e2eToken as its first admin token; env adds settings. It is stopped
// when the test ends.
func startServeInProcess(t *testing.T, env map[string]string) *runningServer {
	t.Helper()
	vars := map[string]string{
		"PAYDISPATCH_DATA_DIR": dataDir(t), "PAYDISPATCH_HTTP_ADDR": "127.0.0.1:0",
		"PAYDISPATCH_TEMPORAL_PORT": "0", "PAYDISPATCH_TEMPORAL_UI_PORT": "0", "PAYDISPATCH_TEMPORAL_LOG_LEVEL": "fatal",
		"PAYDISPATCH_BOOTSTRAP_TOKEN": e2eToken, "PAYDISPATCH_TOKEN_RATE_LIMIT": "0",
	}
	for k, v := range env {
		vars[k] = v
	}
	var c serverConfig
	set := config.NewSet(flag.NewFlagSet("serve in process", flag.ContinueOnError), func(k string) string { return vars[k] },
		append(append(append(config.DatabaseSettings(&c.db), config.ServerSettings(&c.srv)...), config.TemporalSettings(&c.tc)...),
			append(config.DispatchSettings(&c.dm), append(append(config.RailSettings(&c.rl), config.RelaySettings(&c.rc)...),
				append(config.WebhookSettings(&c.wh), config.KafkaSettings(&c.kc)...)...)...)...)...)
	if err := set.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := c.rc.Check(c.rl); err != nil {
		t.Fatal(err)
	}
	logs := &syncWriter{w: &bytes.Buffer{}}
	env2 := &environment{stdout: io.Discard, stderr: logs, getenv: func(k string) string { return vars[k] }}
	began := time.Now()
	run, err := startServer(context.Background(), env2, c, newLogger(env2, config.Log{Level: slog.LevelWarn}))
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, logs.w)
	}
	t.Cleanup(func() {
		shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = run.http.Shutdown(shutdown)
		run.stop()
		if t.Failed() {
			logs.mu.Lock()
			t.Logf("serve's log:\n%s", logs.w)
			logs.mu.Unlock()
		}
	})
	waitHTTP(t, "http://"+run.addr+"/readyz")
	t.Logf("serve ready in process in %v on %s", time.Since(began).Round(time.Millisecond), run.addr)
	return run
}
