package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/console"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// leverTokens knows one token: an operator's, with the admin scope.
type leverTokens struct{}

func (leverTokens) Authenticate(_ context.Context, token string) (auth.Principal, error) {
	if token != "console-levers" {
		return auth.Principal{}, auth.ErrUnauthenticated
	}
	return auth.Principal{TokenID: "tok_console", Name: "ops", Scopes: []auth.Scope{auth.Admin}}, nil
}

// TestConsoleLeversInChromium drives the console's levers in headless
// Chromium against the API on the real stores (acme's three payments
// waiting on SEPA, as the levers' command test has them): the operator
// pauses the tenant acme in the Pauses panel (typing its id to
// confirm), sees the pause listed and its payments held, resumes it
// with its row's button and sees them paced again; looks a payment up,
// sees its priority, and changes it; and a refusal naming markup (a file
// id of HTML) is shown as text, not run. Each change is in the audit log
// under the operator's name; signing out forgets what was shown. Screenshots go to
// $PAYDISPATCH_TEST_ARTIFACTS, as TestConsoleInChromium's.
func TestConsoleLeversInChromium(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a browser")
	}
	browser := findChromium(t)
	artifacts := artifactDir(t)
	_, pool := leverPayments(t)
	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(pool), Queue: queue.New(pool), Pacer: pacing.New(pacing.Config{Pool: pool}),
		Rails: routing.NewResolver(pool, routing.ResolverConfig{})})
	rt, err := httpapi.NewRouter(httpapi.RouterConfig{Auth: leverTokens{}, Services: httpapi.Services{Audit: audit.New(audit.Config{DB: pool}), Payments: svc, Levers: svc,
		Console: console.New(queue.New(pool), pacing.New(pacing.Config{Pool: pool}), nil, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rt)
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 1000))...)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(allocCtx)
	defer cancelTab()
	steps := 0
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
		if err == nil {
			steps++
			err = os.WriteFile(filepath.Join(artifacts, fmt.Sprintf("%02d-%s.png", steps, name)), png, 0o644)
		}
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
	}
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(tab, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
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
	submit := func(form string) chromedp.Action[chromedp.Void] {
		return chromedp.Click(chromedp.CSS(form + ` button[type="submit"]`))
	}
	confirm := func(word string) {
		t.Helper()
		do("the confirmation dialog", chromedp.WaitVisible(chromedp.ID("confirm-ok")))
		if word != "" {
			if eval(`String(document.getElementById('confirm-ok').disabled)`) != "true" {
				t.Fatal("Confirm is enabled before the id is typed")
			}
			do("type the confirmation", chromedp.SendKeys(chromedp.ID("confirm-input"), word))
		}
		do("confirm", chromedp.Click(chromedp.ID("confirm-ok")), chromedp.WaitNotVisible(chromedp.ID("confirm")))
	}
	one := func(sql string) string {
		t.Helper()
		var v string
		if err := pool.QueryRow(context.Background(), sql).Scan(&v); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return v
	}

	do("sign in", chromedp.Navigate(srv.URL+"/console"), chromedp.WaitVisible(chromedp.ID("sign-in-form")),
		chromedp.SendKeys(chromedp.ID("token"), "console-levers"), chromedp.SendKeys(chromedp.ID("operator"), "anna"),
		submit("#sign-in-form"), chromedp.WaitVisible(chromedp.ID("app")))
	until("nothing paused", `(document.querySelector('#pause-table tr.empty') || {}).textContent === 'nothing is paused'`)

	// Pause acme: its three waiting payments are held.
	do("pause acme", chromedp.SetValue(chromedp.ID("pause-scope"), "TENANT"), chromedp.SetValue(chromedp.ID("pause-id"), "acme"), submit("#pause-form"))
	confirm("acme")
	until("acme's pause listed", `document.querySelector('#pause-table tr[data-scope="TENANT"][data-id="acme"]') !== null`)
	if got := eval(`document.getElementById('pause-result').textContent`); !strings.Contains(got, "tenant acme paused: 3 waiting payments held, 3 parked now") {
		t.Errorf("the pause's result: %q", got)
	}
	if got := eval(`document.querySelector('#pause-table tr[data-id="acme"] td:nth-child(3)').textContent`); !strings.HasSuffix(got, "Z") {
		t.Errorf("paused since %q, want a UTC time", got)
	}
	if got := one(`SELECT count(*) || '/' || count(*) FILTER (WHERE paused_by = 'TENANT:acme') FROM payments WHERE status = 'SCHEDULED'`); got != "3/3" {
		t.Errorf("after the pause, SCHEDULED/paused: %s, want 3/3", got)
	}
	shot("paused")

	// Resume it from its row.
	do("resume acme", chromedp.Click(chromedp.CSS(`#pause-table tr[data-id="acme"] button.resume`)))
	confirm("")
	until("nothing paused again", `(document.querySelector('#pause-table tr.empty') || {}).textContent === 'nothing is paused'`)
	if got := eval(`document.getElementById('pause-result').textContent`); !strings.Contains(got, "tenant acme resumed: 3 paced again, slots ") {
		t.Errorf("the resume's result: %q", got)
	}
	if got := one(`SELECT count(*)::text FROM payments p JOIN exec_queue q ON q.item_id = p.payment_id WHERE p.paused_by IS NULL AND q.queue_status = 'READY'`); got != "3" {
		t.Errorf("after the resume, %s waiting READY, want 3", got)
	}
	shot("resumed")

	// A refusal that names markup shows it as text.
	do("pause a file named in HTML", chromedp.SetValue(chromedp.ID("pause-scope"), "BATCH"),
		chromedp.SetValue(chromedp.ID("pause-id"), `<img src=x id=injected>`), submit("#pause-form"))
	confirm(`<img src=x id=injected>`)
	until("the refusal", `document.getElementById('pause-result').classList.contains('bad')`)
	if got := eval(`document.getElementById('pause-result').textContent + '|' + String(document.getElementById('injected'))`); !strings.Contains(got,
		"nothing was paused: Not Found: no payment batch <img src=x id=injected>|null") {
		t.Errorf("the refusal: %q, want the id as text and no element made of it", got)
	}

	// A payment's priority: shown, and changed.
	do("look acme-002 up", chromedp.SetValue(chromedp.ID("pay-id"), "acme-002"), chromedp.SetValue(chromedp.ID("pay-tenant"), "acme"), submit("#pay-form"))
	until("its priority", `(document.querySelector('#pay-fields dd[data-field="priority"]') || {}).textContent === 'NORMAL'`)
	do("make it HIGH", chromedp.SetValue(chromedp.ID("prio-value"), "HIGH"), submit("#prio-form"))
	until("its new priority", `document.querySelector('#pay-fields dd[data-field="priority"]').textContent === 'HIGH'`)
	if got := eval(`document.getElementById('prio-result').textContent`); !strings.HasPrefix(got, "priority HIGH; the payments waiting with it: 3 paced again") {
		t.Errorf("the change's result: %q", got)
	}
	if got := one(`SELECT priority FROM payments WHERE external_id = 'acme-002'`); got != "HIGH" {
		t.Errorf("acme-002's priority %s, want HIGH", got)
	}
	shot("priority")

	// Signing out forgets the pauses and the payment read.
	do("sign out", chromedp.Click(chromedp.ID("sign-out")), chromedp.WaitVisible(chromedp.ID("sign-in-form")))
	if got := eval(`document.querySelectorAll('#pause-table tbody tr').length + '|' + document.getElementById('pause-result').textContent +
		'|' + document.getElementById('prio-result').textContent`); got != "0||" {
		t.Errorf("after sign-out: %q", got)
	}

	if got := one(`SELECT string_agg(actor || ' ' || action, ', ' ORDER BY seq) FROM admin_audit`); got !=
		"tok_console (ops) as anna POST /admin/pauses, tok_console (ops) as anna DELETE /admin/pauses/{scope}/{id}, tok_console (ops) as anna POST /v1/payments/{id}/priority" {
		t.Errorf("audit log: %s", got)
	}
}
