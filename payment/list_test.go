package payment_test

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/payment"
)

// listRow is a stored payment as the list test knows it.
type listRow struct {
	key, id, tenant, status, debtor string
	requested, created              time.Time
	n                               int // the order it was stored in
}

// seedList stores n payments of three tenants over four instants, in
// four statuses and three debtor accounts, and one file of acme's
// payments in parts of 40; it returns them.
func seedList(t *testing.T, pool *pgxpool.Pool, n int) []listRow {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2026, 11, 26, 16, 0, 0, 0, time.UTC)
	statuses := []string{"SCHEDULED", "DELIVERED", "CANCELLED", "FAILED"}
	var rows []listRow
	for i := range n {
		tenant := []string{"acme", "acme", "globex"}[i%3]
		id := fmt.Sprintf("p-%05d", i)
		rows = append(rows, listRow{key: payment.Key(tenant, id), id: id, tenant: tenant, status: statuses[(i/3)%4],
			debtor: fmt.Sprintf("ACC-%d", (i/7)%3), requested: base.Add(time.Duration(i%4) * time.Hour),
			created: base.Add(-time.Hour).Add(time.Duration(i%50) * time.Second), n: i})
	}
	batch := pgx.Batch{}
	for _, r := range rows {
		batch.Queue(`INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
			requested_execution_time, status, created_at, updated_at) VALUES ($1, $2, $3, $4, 12.5, 'EUR', 'Jane Doe', $5, $6, $7, $7)`,
			r.key, r.id, r.tenant, r.debtor, r.requested, r.status, r.created)
	}
	var file []string
	for _, r := range rows {
		if r.tenant == "acme" && len(file) < 150 {
			file = append(file, r.key)
		}
	}
	batch.Queue(`INSERT INTO payment_batches (batch_id, tenants, payments, chunks) VALUES ('file-1', '{acme}', $1, 4)`, len(file))
	for p := 0; p*40 < len(file); p++ {
		batch.Queue(`INSERT INTO payment_batch_parts (batch_id, part, payment_ids) VALUES ('file-1', $1, $2)`, p, file[p*40:min(len(file), p*40+40)])
	}
	if err := pool.SendBatch(ctx, &batch).Close(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestList: every filter and pair of filters, paged seven at a time,
// gives exactly the tenant's payments that match, newest first, each
// once; a file's come last line first; another tenant's never appear.
func TestList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	rows := seedList(t, pool, 600)
	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(pool)})
	base := time.Date(2026, 11, 26, 16, 0, 0, 0, time.UTC)
	var file []string
	for _, r := range rows {
		if r.tenant == "acme" && len(file) < 150 {
			file = append(file, r.id)
		}
	}
	for _, tt := range []struct {
		name string
		f    payment.ListFilter
	}{
		{"a tenant's", payment.ListFilter{TenantID: "acme"}},
		{"another tenant's", payment.ListFilter{TenantID: "globex"}},
		{"a status", payment.ListFilter{TenantID: "acme", Status: payment.StatusCancelled}},
		{"a debtor", payment.ListFilter{TenantID: "acme", DebtorAccount: "ACC-1"}},
		{"a status and a debtor", payment.ListFilter{TenantID: "acme", Status: payment.StatusDelivered, DebtorAccount: "ACC-2"}},
		{"requested between", payment.ListFilter{TenantID: "acme", RequestedFrom: base.Add(time.Hour), RequestedTo: base.Add(3 * time.Hour)}},
		{"a status requested between", payment.ListFilter{TenantID: "acme", Status: payment.StatusScheduled, RequestedFrom: base.Add(2 * time.Hour)}},
		{"a file", payment.ListFilter{TenantID: "acme", BatchID: "file-1"}},
		{"a file's in a status", payment.ListFilter{TenantID: "acme", BatchID: "file-1", Status: payment.StatusFailed}},
		{"a file, by another tenant", payment.ListFilter{TenantID: "globex", BatchID: "file-1"}},
		{"no such debtor", payment.ListFilter{TenantID: "acme", DebtorAccount: "ACC-9"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var want []string
			if tt.f.BatchID != "" {
				for i := len(file) - 1; i >= 0; i-- {
					r := rows[slices.IndexFunc(rows, func(r listRow) bool { return r.id == file[i] && r.tenant == "acme" })]
					if r.tenant == tt.f.TenantID && (tt.f.Status == "" || r.status == string(tt.f.Status)) {
						want = append(want, r.id)
					}
				}
			} else {
				var match []listRow
				for _, r := range rows {
					if r.tenant == tt.f.TenantID && (tt.f.Status == "" || r.status == string(tt.f.Status)) &&
						(tt.f.DebtorAccount == "" || r.debtor == tt.f.DebtorAccount) &&
						(tt.f.RequestedFrom.IsZero() || !r.requested.Before(tt.f.RequestedFrom)) &&
						(tt.f.RequestedTo.IsZero() || r.requested.Before(tt.f.RequestedTo)) {
						match = append(match, r)
					}
				}
				slices.SortFunc(match, func(a, b listRow) int {
					return cmp.Or(b.requested.Compare(a.requested), cmp.Compare(b.n, a.n))
				})
				for _, r := range match {
					want = append(want, r.id)
				}
			}
			var got []string
			after := ""
			for pages := 0; ; pages++ {
				if pages > 200 {
					t.Fatal("no end to the pages")
				}
				page, err := svc.List(ctx, tt.f, after, 7)
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Payments) > 7 {
					t.Fatalf("a page of %d", len(page.Payments))
				}
				for _, v := range page.Payments {
					if v.TenantID != tt.f.TenantID {
						t.Fatalf("listed %s of %s", v.PaymentID, v.TenantID)
					}
					got = append(got, v.PaymentID)
				}
				if page.Next == "" {
					break
				}
				after = page.Next
			}
			if !slices.Equal(got, want) {
				t.Fatalf("listed %d: %v\nwant %d: %v", len(got), got, len(want), want)
			}
		})
	}
	// Files with 1,200 keys of no payment after five payments (more than
	// a page reads): a page comes back empty with a position, and the next
	// ones reach the five, whether the keys are in a part of their own or
	// in the first part, after the five.
	var real []string
	for _, r := range rows {
		if r.tenant == "acme" && len(real) < 5 {
			real = append(real, r.key)
		}
	}
	ghosts := make([]string, 1200)
	for i := range ghosts {
		ghosts[i] = fmt.Sprintf("ghost-%d", i)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO payment_batch_parts (batch_id, part, payment_ids)
		VALUES ('file-2', 0, $1), ('file-2', 1, $2), ('file-3', 0, $1 || $2)`, real, ghosts); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO payment_batches (batch_id, tenants, payments, chunks)
		VALUES ('file-2', '{acme}', 1205, 2), ('file-3', '{acme}', 1205, 1)`); err != nil {
		t.Fatal(err)
	}
	for _, batch := range []string{"file-2", "file-3"} {
		var got []string
		pages := 0
		for after := ""; ; pages++ {
			page, err := svc.List(ctx, payment.ListFilter{TenantID: "acme", BatchID: batch}, after, 7)
			if err != nil || pages > 10 {
				t.Fatalf("%s, page %d: %v", batch, pages, err)
			}
			for _, v := range page.Payments {
				got = append(got, payment.Key(v.TenantID, v.PaymentID))
			}
			if after = page.Next; after == "" {
				break
			}
		}
		if want := []string{real[4], real[3], real[2], real[1], real[0]}; !slices.Equal(got, want) || pages < 1 {
			t.Errorf("%s listed %v in %d pages, want %v after an empty first page", batch, got, pages+1, want)
		}
	}
	if _, err := svc.List(ctx, payment.ListFilter{TenantID: "acme"}, "nonsense", 7); err != payment.ErrBadPosition {
		t.Errorf("a made-up position: %v", err)
	}
}

// TestListPlansAtAMillion: on 1,000,000 payments of 20 tenants (50,000
// each, 10,000 from each of 5 debtor accounts, over 96 instants), each
// filter of the list reads its own index in the list's order: no
// sequential scan, no sort; the page's rows are then read by key.
func TestListPlansAtAMillion(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("stores a million payments")
	}
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	if _, err := pool.Exec(ctx, `
		INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
		                      requested_execution_time, status, created_at)
		SELECT 'k-' || g, 'p-' || g, 't-' || (g % 20), 'ACC-' || (g % 5), 1, 'EUR', 'Jane Doe',
		       timestamptz '2026-11-26 16:00Z' + (g / 160 % 96) * interval '15 minutes',
		       (ARRAY['SCHEDULED','DELIVERED','DELIVERED','DELIVERED','FAILED','CANCELLED','RETURNED','REJECTED'])[(g / 20) % 8 + 1],
		       timestamptz '2026-11-25 09:00Z' + g * interval '10 ms'
		FROM generate_series(1, 1000000) g;
		INSERT INTO payment_batch_parts (batch_id, part, payment_ids)
		SELECT 'file-1', p, array_agg('k-' || g) FROM generate_series(1, 100000) g, LATERAL (SELECT g / 2500 AS p) x GROUP BY p;
		INSERT INTO payment_batches (batch_id, tenants, payments, chunks)
		SELECT 'file-1', array_agg('t-' || g), 100000, 41 FROM generate_series(0, 19) g;
		ANALYZE payments; ANALYZE payment_batch_parts`); err != nil {
		t.Fatal(err)
	}
	from, to := time.Date(2026, 11, 26, 18, 0, 0, 0, time.UTC), time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name, index string
		f           payment.ListFilter
	}{
		{"a tenant's", "payments_list_idx", payment.ListFilter{TenantID: "t-3"}},
		{"requested between", "payments_list_idx", payment.ListFilter{TenantID: "t-3", RequestedFrom: from, RequestedTo: to}},
		{"a status", "payments_list_status_idx", payment.ListFilter{TenantID: "t-3", Status: payment.StatusCancelled}},
		{"a status requested between", "payments_list_status_idx", payment.ListFilter{TenantID: "t-3", Status: payment.StatusFailed, RequestedFrom: from, RequestedTo: to}},
		{"a debtor", "payments_list_debtor_idx", payment.ListFilter{TenantID: "t-3", DebtorAccount: "ACC-3"}},
		{"a debtor in a status", "payments_list_debtor_idx", payment.ListFilter{TenantID: "t-3", DebtorAccount: "ACC-3", Status: payment.StatusDelivered}},
		{"a file", "payment_batch_parts_pkey", payment.ListFilter{TenantID: "t-3", BatchID: "file-1"}},
	} {
		plan := pgtest.Plans(t, pool, false, func(ctx context.Context, tx pgx.Tx) error {
			page, err := (payment.NewService(payment.ServiceConfig{Store: payment.NewStore(tx)})).List(ctx, tt.f, "", 100)
			if err == nil && len(page.Payments) == 0 {
				err = fmt.Errorf("%s: an empty page", tt.name)
			}
			return err
		})
		if testing.Verbose() {
			t.Logf("%s:\n%s", tt.name, plan)
		}
		if !strings.Contains(plan, tt.index) || strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "Sort") {
			t.Errorf("%s: want %s, no sequential scan and no sort:\n%s", tt.name, tt.index, plan)
		}
	}
}

// TestListAnotherTenantsFile: a file holding none of the tenant's payments
// lists exactly as an unknown file does, page after page: no payments
// and no position, which would tell the file's size (issue 44).
func TestListAnotherTenantsFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(pool)})
	// globex's file of 3,000 keys, more than a page reads (1,000), and a
	// file of both tenants'.
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = payment.Key("globex", fmt.Sprintf("g-%04d", i))
	}
	if _, err := pool.Exec(ctx, `INSERT INTO payment_batches (batch_id, tenants, payments, chunks)
		VALUES ('globex-file', '{globex}', 3000, 3), ('shared-file', '{globex,acme}', 3000, 3)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO payment_batch_parts (batch_id, part, payment_ids)
		SELECT b, p, $1::text[] FROM unnest(ARRAY['globex-file', 'shared-file']) b, generate_series(0, 2) p`, keys[:1000]); err != nil {
		t.Fatal(err)
	}
	unknown, err := svc.List(ctx, payment.ListFilter{TenantID: "acme", BatchID: "no-such-file"}, "", 7)
	if err != nil || len(unknown.Payments) != 0 || unknown.Next != "" {
		t.Fatalf("an unknown file: %+v, %v", unknown, err)
	}
	for _, tt := range []struct {
		name, tenant, batch string
		wantNext            bool
	}{
		{"another tenant's file", "acme", "globex-file", false},
		{"another tenant's file, after a made-up position", "acme", "globex-file", false},
		{"the tenant's own file", "globex", "globex-file", true},
		{"a file with some of the tenant's", "acme", "shared-file", true},
	} {
		after := ""
		if strings.Contains(tt.name, "made-up") {
			after = "b2.500"
		}
		page, err := svc.List(ctx, payment.ListFilter{TenantID: tt.tenant, BatchID: tt.batch}, after, 7)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if tt.wantNext != (page.Next != "") {
			t.Errorf("%s: next %q, want one: %t", tt.name, page.Next, tt.wantNext)
		}
		if !tt.wantNext && !reflect.DeepEqual(page, unknown) {
			t.Errorf("%s: %#v, want the unknown file's %#v", tt.name, page, unknown)
		}
	}
}
