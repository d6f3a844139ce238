package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/paydispatch/paydispatch/payment"
)

// TestConsoleApprovalsInChromium drives the console's Awaiting approval
// panel in headless Chromium against serve, run in this process. acme's
// rule "big" asks one approval of a payment of 1,000.00 or more; a clerk,
// with a token of its own, submits three over it and one under it, and
// the admin token submits one more. The operator, signed in with the
// admin token, loads acme's waiting payments: the clerk's three and the
// admin's one, each with its amount and reason, and not the one under
// the rule. Approve schedules one (its approval counted under the admin
// token, not the clerk's); Deny, with the reason the console asks for,
// rejects another "DENIED by" its actor; a denial left without a reason
// decides nothing; the admin's own payment is refused (403 own-payment)
// and the refusal shown; a payment cancelled while listed is shown as no
// longer waiting. After each the panel lists what still waits; the
// decisions are stored under the admin token's principal and audited
// under the operator's name; signing out forgets the panel. Screenshots
// go to $PAYDISPATCH_TEST_ARTIFACTS, as TestConsoleInChromium's.
func TestConsoleApprovalsInChromium(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a private stack and a browser")
	}
	browser := findChromium(t)
	artifacts := artifactDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	srv, base, data := approvalsStack(t)
	clerk, clerkID := createToken(t, data, "clerk", "--scopes", "payments:write,payments:read")

	// An hour ahead: approved, a payment waits SCHEDULED for its instant.
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	submit := func(token, id, amount string) { t.Helper(); submitAcme(t, base, token, id, amount, at) }
	// ap-3 is at the rule's amount: "at least" matches it.
	waiting := []struct{ id, amount string }{{"ap-1", "1500.00"}, {"ap-2", "2500.00"}, {"ap-3", "1000.00"}}
	for _, p := range waiting {
		submit(clerk, p.id, p.amount)
	}
	submit(clerk, "small-1", "999.99")
	submit(e2eToken, "own-1", "5000.00")
	type view struct{ Status, StatusReason, QueueStatus string }
	paymentView := func(id string) view {
		t.Helper()
		var v view
		_ = json.Unmarshal([]byte(get(t, base+"/v1/payments/"+id+"?tenantId=acme")), &v)
		return v
	}
	const reason = "APPROVAL: 0 of 1 approvals (rule big)"
	waitUntil(t, 30*time.Second, func() bool {
		for _, id := range []string{"ap-1", "ap-2", "ap-3", "own-1"} {
			if v := paymentView(id); v.Status != string(payment.StatusAwaitingApproval) {
				return false
			}
		}
		return paymentView("small-1").Status == string(payment.StatusScheduled)
	})
	if v := paymentView("ap-1"); v.StatusReason != reason {
		t.Fatalf("ap-1 waits with %q, want %q", v.StatusReason, reason)
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
			panel, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById('approvals').innerText`))
			t.Fatalf("%s: %v\nthe panel:\n%s", what, err, panel)
		}
	}
	until := func(what, js string) {
		t.Helper()
		do(what, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second)))
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(tab, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	// The console asks a denial's reason with window.prompt: each prompt
	// is answered with the next of answers ("" dismisses it), and its
	// message kept.
	answers := make(chan string, 4)
	prompts := make(chan string, 4)
	// Subscribed here, not in the goroutine: Events starts the browser,
	// which must not race the first action's start of it.
	dialogs := chromedp.Events(tab, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			prompts <- ev.Message
			answer := <-answers
			if _, err := chromedp.Call(tab, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: answer != "", PromptText: answer}); err != nil {
				return
			}
		}
	}()
	prompted := func() string {
		t.Helper()
		select {
		case m := <-prompts:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("Deny asked no reason")
			return ""
		}
	}
	// rows are the panel's rows, by id: id, amount and reason each.
	rows := func() string {
		return eval(`Array.from(document.querySelectorAll('#appr-table tbody tr')).map((r) => r.classList.contains('empty') ? r.textContent :
			[r.dataset.id, r.children[1].textContent, r.children[4].textContent].join(' | ')).sort().join('\n')`)
	}
	// listed is true when the panel lists ids (sorted) and no other.
	listed := func(ids ...string) string {
		want, _ := json.Marshal(ids)
		return `JSON.stringify(Array.from(document.querySelectorAll('#appr-table tbody tr[data-id]')).map((r) => r.dataset.id).sort()) === ` + jsString(string(want))
	}
	result := func() string {
		return eval(`document.getElementById('appr-result').className + ' | ' + document.getElementById('appr-result').textContent`)
	}
	row := func(id string) string { return `#appr-table tr[data-id="` + id + `"]` }

	do("sign in", chromedp.Navigate(base+"/console"), chromedp.WaitVisible(chromedp.ID("sign-in-form")),
		chromedp.SendKeys(chromedp.ID("token"), e2eToken), chromedp.SendKeys(chromedp.ID("operator"), "anna"),
		chromedp.Click(chromedp.CSS(`#sign-in-form button[type="submit"]`)), chromedp.WaitVisible(chromedp.ID("app")))
	do("load acme's", chromedp.SetValue(chromedp.ID("appr-tenant"), "acme"), chromedp.Click(chromedp.CSS(`#appr-filter button[type="submit"]`)))
	until("acme's waiting payments", listed("ap-1", "ap-2", "ap-3", "own-1"))
	want := "ap-1 | 1500.00 EUR | " + reason + "\nap-2 | 2500.00 EUR | " + reason + "\nap-3 | 1000.00 EUR | " + reason + "\nown-1 | 5000.00 EUR | " + reason
	if got := rows(); got != want {
		t.Errorf("the panel lists:\n%s\nwant:\n%s", got, want)
	}
	shot("awaiting")

	// Approve: ap-1's one approval is complete, and it leaves the list.
	do("approve ap-1", chromedp.Click(chromedp.CSS(row("ap-1")+` button.approve`)))
	until("ap-1 gone", listed("ap-2", "ap-3", "own-1"))
	if got := result(); got != "result ok | ap-1 approved: its approvals are complete, it is scheduled" {
		t.Errorf("the approval's result: %q", got)
	}
	if v := paymentView("ap-1"); v.Status != string(payment.StatusScheduled) || v.StatusReason != payment.ReasonApproved || v.QueueStatus != "READY" {
		t.Errorf("ap-1 after its approval: %+v, want SCHEDULED %q READY", v, payment.ReasonApproved)
	}
	shot("approved")

	// Deny asks why; dismissed, it decides nothing. (The click returns
	// once the prompt is answered, so the answer goes first.)
	answers <- ""
	do("deny ap-2 without a reason", chromedp.Click(chromedp.CSS(row("ap-2")+` button.deny`)))
	if got := prompted(); got != "Deny ap-2: why? (kept as its status reason)" {
		t.Errorf("the denial asks %q", got)
	}
	if v := paymentView("ap-2"); v.Status != string(payment.StatusAwaitingApproval) {
		t.Errorf("ap-2 after a denial without a reason: %+v, want it waiting", v)
	}
	answers <- "not on the supplier list"
	do("deny ap-2", chromedp.Click(chromedp.CSS(row("ap-2")+` button.deny`)))
	prompted()
	until("ap-2 gone", listed("ap-3", "own-1"))
	if got := result(); got != "result ok | ap-2 denied: 1 rejected" {
		t.Errorf("the denial's result: %q", got)
	}
	if v := paymentView("ap-2"); v.Status != string(payment.StatusRejected) || !strings.HasPrefix(v.StatusReason, "DENIED by tok_") ||
		!strings.HasSuffix(v.StatusReason, " as anna: not on the supplier list") {
		t.Errorf("ap-2 after its denial: %+v, want REJECTED, DENIED by the admin token as anna", v)
	}
	shot("denied")

	// The admin token submitted own-1: four eyes refuse it its approval,
	// and the panel says so.
	do("approve own-1", chromedp.Click(chromedp.CSS(row("own-1")+` button.approve`)))
	until("the refusal", `document.getElementById('appr-result').classList.contains('bad')`)
	if got := result(); !strings.HasPrefix(got, "result bad | own-1: Forbidden: four eyes: a payment is never approved or denied by the principal that submitted it") {
		t.Errorf("the refusal's result: %q", got)
	}
	if v := paymentView("own-1"); v.Status != string(payment.StatusAwaitingApproval) || v.StatusReason != reason {
		t.Errorf("own-1 after its submitter's approval: %+v, want it waiting", v)
	}
	until("own-1 still listed", listed("ap-3", "own-1"))
	shot("own-payment")

	// ap-3, cancelled while listed: approving it decides nothing, and
	// the panel says so and drops it.
	var cancelled any
	if code := postJSON(t, base+"/v1/payments/ap-3/cancel?tenantId=acme", "application/json", "", &cancelled); code != http.StatusOK {
		t.Fatalf("cancel ap-3: %d %v", code, cancelled)
	}
	do("approve ap-3", chromedp.Click(chromedp.CSS(row("ap-3")+` button.approve`)))
	until("ap-3 gone", listed("own-1"))
	if got := result(); got != "result | ap-3 no longer awaits approval (decided or cancelled meanwhile): nothing was decided" {
		t.Errorf("approving a cancelled payment: %q", got)
	}

	// The database: each decision under the admin token's principal, not
	// the clerk's, who submitted them; small-1 needs none.
	one := func(sql string, args ...any) string {
		t.Helper()
		var v string
		if err := srv.store.Pool.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return v
	}
	if got := one(`SELECT coalesce(string_agg(p.external_id || ' ' || a.decision || ' ' || coalesce(a.reason, '-') || ' ' || (a.principal <> r.submitter)::text
		|| ' ' || (r.submitter = $1)::text, ', ' ORDER BY p.external_id), '') FROM payment_approvals a JOIN payments p ON p.payment_id = a.payment_id
		JOIN payment_approval_requirements r ON r.payment_id = a.payment_id`, clerkID); got !=
		"ap-1 APPROVE - true true, ap-2 DENY not on the supplier list true true" {
		t.Errorf("the decisions stored: %s", got)
	}
	// The two decisions made are in the audit log under the operator's
	// name; the refused and the empty one changed nothing.
	if got := one(`SELECT string_agg(regexp_replace(actor, '^tok_[0-9a-f]+', 'tok_…') || ' ' || action, ', ' ORDER BY seq) FROM admin_audit
		WHERE action IN ('POST /v1/payments/approve', 'POST /v1/payments/deny')`); got !=
		"tok_… (bootstrap admin) as anna POST /v1/payments/approve, tok_… (bootstrap admin) as anna POST /v1/payments/deny" {
		t.Errorf("the audit log's decisions: %s", got)
	}
	if got := one(`SELECT count(*)::text FROM payment_approval_requirements WHERE payment_id = $1`, payment.Key("acme", "small-1")); got != "0" {
		t.Errorf("small-1 has %s approval requirements, want none", got)
	}

	// Signing out forgets what was listed.
	do("sign out", chromedp.Click(chromedp.ID("sign-out")), chromedp.WaitVisible(chromedp.ID("sign-in-form")))
	if got := eval(`document.querySelectorAll('#appr-table tbody tr').length + '|' + document.getElementById('appr-result').textContent +
		'|' + document.getElementById('appr-tenant').value`); got != "0||" {
		t.Errorf("after sign-out: %q", got)
	}
	t.Logf("%d steps, screenshots in %s", steps, artifacts)
}
