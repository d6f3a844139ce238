package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/paydispatch/paydispatch/payment"
)

// TestConsoleCheckerInChromium signs in to the console, in headless
// Chromium against serve run in this process, with tokens that lack the
// admin scope. One with payments:read alone is refused at sign-in, saying
// which scopes the console needs. A checker's, bound to acme with
// payments:approve and payments:read, sees the Awaiting approval panel
// alone, its tenant taken from the token: it lists the payments a clerk
// submitted over acme's rule, approves one (SCHEDULED after) and denies
// another, and the decisions are stored under the checker's token and
// audited under its operator's name. The page calls no admin endpoint but
// the sign-in's first, refused, read of the figures, and polls nothing. A
// checker's token for every tenant names the tenant to list; after it, an
// admin token sees every panel again.
func TestConsoleCheckerInChromium(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a private stack and a browser")
	}
	browser := findChromium(t)
	artifacts := artifactDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	srv, base, data := approvalsStack(t)
	token := func(name string, args ...string) (string, string) { return createToken(t, data, name, args...) }
	clerk, clerkID := token("clerk", "--scopes", "payments:write,payments:read")
	checker, checkerID := token("checker", "--scopes", "payments:approve,payments:read", "--tenant", "acme")
	anyTenant, _ := token("checker-all", "--scopes", "payments:approve,payments:read")
	reader, _ := token("reader", "--scopes", "payments:read", "--tenant", "acme")

	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	for _, id := range []string{"ck-1", "ck-2", "ck-3"} {
		submitAcme(t, base, clerk, id, "1500.00", at)
	}
	type view struct{ Status, StatusReason, QueueStatus string }
	paymentView := func(id string) view {
		t.Helper()
		var v view
		_ = json.Unmarshal([]byte(get(t, base+"/v1/payments/"+id+"?tenantId=acme")), &v)
		return v
	}
	waitUntil(t, 30*time.Second, func() bool {
		return paymentView("ck-1").Status == string(payment.StatusAwaitingApproval) && paymentView("ck-2").Status == string(payment.StatusAwaitingApproval)
	})

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
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(tab, actions...); err != nil {
			if serr := screenshot("failed"); serr != nil {
				t.Logf("no screenshot of the failure: %v", serr)
			}
			body, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("%s: %v\nthe page:\n%s", what, err, body)
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
	// Deny's prompt is answered with the next of answers.
	answers := make(chan string, 2)
	dialogs := chromedp.Events(tab, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			answer := <-answers
			if _, err := chromedp.Call(tab, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: answer != "", PromptText: answer}); err != nil {
				return
			}
		}
	}()
	listed := func(ids ...string) string {
		want, _ := json.Marshal(append([]string{}, ids...))
		return `JSON.stringify(Array.from(document.querySelectorAll('#appr-table tbody tr[data-id]')).map((r) => r.dataset.id).sort()) === ` + jsString(string(want))
	}
	result := func() string {
		return eval(`document.getElementById('appr-result').className + ' | ' + document.getElementById('appr-result').textContent`)
	}
	row := func(id string) string { return `#appr-table tr[data-id="` + id + `"]` }
	signIn := func(what, token string) {
		t.Helper()
		eval(`document.getElementById('token').value = ''; document.getElementById('operator').value = ''; ''`)
		do(what, chromedp.SendKeys(chromedp.ID("token"), token), chromedp.SendKeys(chromedp.ID("operator"), "cara"),
			chromedp.Click(chromedp.CSS(`#sign-in-form button[type="submit"]`)))
	}

	// payments:read alone: refused, naming what the console needs.
	do("open", chromedp.Navigate(base+"/console"), chromedp.WaitVisible(chromedp.ID("sign-in-form")))
	signIn("sign in as a reader", reader)
	const refusal = "This token can use neither the console (it needs the admin scope) nor its Awaiting approval panel " +
		"(it needs payments:approve and payments:read)."
	until("the refusal", `document.getElementById('sign-in-error').textContent !== ''`)
	if got := eval(`document.getElementById('sign-in-error').textContent + '|' + document.getElementById('app').hidden + '|' +
		(sessionStorage.getItem('paydispatch.console.token') || '')`); got != refusal+"|true|" {
		t.Errorf("a reader's sign-in: %q, want %q, the app hidden and no token kept", got, refusal)
	}
	if err := screenshot("reader-refused"); err != nil {
		t.Fatal(err)
	}

	// The checker: the approvals panel alone, acme's listed at once.
	signIn("sign in as the checker", checker)
	until("the app", `!document.getElementById('app').hidden || document.getElementById('sign-in-error').textContent !== ''`)
	if got := eval(`document.getElementById('sign-in-error').textContent`); got != "" {
		t.Fatalf("the checker's sign-in: %s", got)
	}
	until("acme's waiting payments", listed("ck-1", "ck-2", "ck-3"))
	// visible lists the page's panels and tabs a reader sees.
	visible := `Array.from(document.querySelectorAll('#app > section.panel, #app nav.tabs a')).filter((e) => e.offsetParent !== null)
		.map((e) => e.id || e.getAttribute('href')).join(' ')`
	if got := eval(visible); got != "#approvals approvals" {
		t.Errorf("the checker sees %q, want the approvals tab and panel alone", got)
	}
	if got := eval(`document.getElementById('signed-in-as').textContent + '|' + (document.getElementById('appr-tenant').offsetParent === null) +
		'|' + document.getElementById('appr-own-tenant').textContent`); got != "signed in as a checker (cara)|true|tenant acme (this token's)" {
		t.Errorf("the checker's header and tenant: %q", got)
	}
	if err := screenshot("checker"); err != nil {
		t.Fatal(err)
	}

	do("approve ck-1", chromedp.Click(chromedp.CSS(row("ck-1")+` button.approve`)))
	until("ck-1 gone", listed("ck-2", "ck-3"))
	if got := result(); got != "result ok | ck-1 approved: its approvals are complete, it is scheduled" {
		t.Errorf("the approval's result: %q", got)
	}
	if v := paymentView("ck-1"); v.Status != string(payment.StatusScheduled) || v.StatusReason != payment.ReasonApproved || v.QueueStatus != "READY" {
		t.Errorf("ck-1 after its approval: %+v, want SCHEDULED %q READY", v, payment.ReasonApproved)
	}
	answers <- "unknown creditor"
	do("deny ck-2", chromedp.Click(chromedp.CSS(row("ck-2")+` button.deny`)))
	until("ck-2 gone", listed("ck-3"))
	if got := result(); got != "result ok | ck-2 denied: 1 rejected" {
		t.Errorf("the denial's result: %q", got)
	}
	if v := paymentView("ck-2"); v.Status != string(payment.StatusRejected) || !strings.HasSuffix(v.StatusReason, "(checker) as cara: unknown creditor") {
		t.Errorf("ck-2 after its denial: %+v, want REJECTED by the checker as cara", v)
	}
	if err := screenshot("decided"); err != nil {
		t.Fatal(err)
	}

	// Past a second or two, the figures would have been polled: the page
	// called no admin endpoint but the sign-in's refused read of them.
	time.Sleep(2500 * time.Millisecond)
	if got := eval(`performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname).filter((p) => p.startsWith('/admin/')).join(' ')`); got !=
		"/admin/console/stats /admin/console/stats" {
		t.Errorf("the page called %q, want the reader's and the checker's sign-in reads of the figures alone", got)
	}

	one := func(sql string, args ...any) string {
		t.Helper()
		var v string
		if err := srv.store.Pool.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return v
	}
	if got := one(`SELECT coalesce(string_agg(p.external_id || ' ' || a.decision || ' ' || (a.principal = $1)::text || ' ' || (r.submitter = $2)::text,
		', ' ORDER BY p.external_id), '') FROM payment_approvals a JOIN payments p ON p.payment_id = a.payment_id
		JOIN payment_approval_requirements r ON r.payment_id = a.payment_id`, checkerID, clerkID); got != "ck-1 APPROVE true true, ck-2 DENY true true" {
		t.Errorf("the decisions stored: %s", got)
	}
	if got := one(`SELECT string_agg(regexp_replace(actor, '^tok_[0-9a-f]+', 'tok_…') || ' ' || action, ', ' ORDER BY seq) FROM admin_audit
		WHERE action IN ('POST /v1/payments/approve', 'POST /v1/payments/deny')`); got !=
		"tok_… (checker) as cara POST /v1/payments/approve, tok_… (checker) as cara POST /v1/payments/deny" {
		t.Errorf("the audit log's decisions: %s", got)
	}

	// A checker's token for every tenant names the tenant, as an admin's
	// does.
	do("sign out", chromedp.Click(chromedp.ID("sign-out")), chromedp.WaitVisible(chromedp.ID("sign-in-form")))
	signIn("sign in as a checker of every tenant", anyTenant)
	do("the tenant field", chromedp.WaitVisible(chromedp.ID("appr-tenant")))
	if got := eval(visible); got != "#approvals approvals" {
		t.Errorf("the checker of every tenant sees %q, want the approvals tab and panel alone", got)
	}
	do("load acme's", chromedp.SendKeys(chromedp.ID("appr-tenant"), "acme"), chromedp.Click(chromedp.ID("appr-load")))
	until("acme's", listed("ck-3"))

	// Signing out gives the next sign-in every panel back.
	do("sign out", chromedp.Click(chromedp.ID("sign-out")), chromedp.WaitVisible(chromedp.ID("sign-in-form")))
	signIn("sign in as admin", e2eToken)
	do("the admin's app", chromedp.WaitVisible(chromedp.ID("live")), chromedp.WaitVisible(chromedp.ID("appr-tenant")))
	if got := eval(`Array.from(document.querySelectorAll('#app > section.panel')).filter((e) => e.offsetParent === null).length + '|' +
		document.getElementById('signed-in-as').textContent`); got != "0|signed in as cara" {
		t.Errorf("the admin after the checker: %q, want every panel shown", got)
	}
	t.Logf("%d steps, screenshots in %s", steps, artifacts)
}
