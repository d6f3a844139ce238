package chaos

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/demo"
	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/payment"
)

// checks are the suite's invariants beyond the demo's: each payment
// executed once by every witness, each queue transition audited, and
// every planned fault injected.
func checks(ctx context.Context, pool *pgxpool.Pool, temporalAddr string, o Options, faults []injected) []demo.Check {
	var out []demo.Check
	add := func(name string, ok bool, format string, args ...any) {
		out = append(out, demo.Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	fail := func(name string, err error) { add(name, false, "could not check: %v", err) }

	const once = "each payment executed once: one saga, one debit, each saga step completed once"
	var executed, sagas, missing, extraSagas, twoSagas, twoDebits, twoSteps int
	err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM payments WHERE status IN ('DELIVERED', 'RETURNED', 'FAILED')),
		(SELECT count(*) FROM process_instance WHERE process_type = $1),
		(SELECT count(*) FROM payments p WHERE p.status IN ('DELIVERED', 'RETURNED', 'FAILED') AND NOT EXISTS
			(SELECT 1 FROM process_instance i WHERE i.process_type = $1 AND i.business_key = p.payment_id)),
		(SELECT count(*) FROM process_instance i WHERE i.process_type = $1 AND NOT EXISTS
			(SELECT 1 FROM payments p WHERE p.payment_id = i.business_key AND p.status IN ('DELIVERED', 'RETURNED', 'FAILED'))),
		(SELECT count(*) FROM (SELECT 1 FROM process_instance WHERE process_type = $1 GROUP BY business_key HAVING count(*) > 1) x),
		(SELECT count(*) FROM (SELECT 1 FROM account_transaction WHERE type = 'DEBIT' GROUP BY description HAVING count(*) > 1) x),
		(SELECT count(*) FROM (SELECT 1 FROM process_log WHERE event = 'StepCompleted' GROUP BY process_id, step HAVING count(*) > 1) x)`,
		payment.SubmitPaymentType).Scan(&executed, &sagas, &missing, &extraSagas, &twoSagas, &twoDebits, &twoSteps)
	if err != nil {
		fail(once, err)
	} else {
		add(once, missing == 0 && extraSagas == 0 && twoSagas == 0 && twoDebits == 0 && twoSteps == 0,
			"%d executed (DELIVERED, RETURNED or FAILED), %d sagas; %d executed without a saga, %d sagas without an execution, %d payments with two sagas, %d debited twice, %d steps completed twice",
			executed, sagas, missing, extraSagas, twoSagas, twoDebits, twoSteps)
	}

	const runs = "each payment's execution ran once (Temporal's visibility): its own workflow, or its batch execution"
	if r, err := execRuns(ctx, pool, temporalAddr); err != nil {
		fail(runs, err)
	} else {
		twice, first := 0, ""
		for id, statuses := range r.runs {
			if len(statuses) > 1 {
				twice++
				if first == "" {
					first = "; e.g. " + id + ": " + strings.Join(statuses, ", ")
				}
			}
		}
		add(runs, twice == 0 && r.executed == executed,
			"%d payments executed by an execution workflow for %d executed payments (%d by their own, %d in %d batch executions); %d workflows ran more than once%s",
			r.executed, executed, r.own, r.executed-r.own, r.batches, twice, first)
	}

	const audited = "every queue transition audited (each item's audit trail replays to its status)"
	if items, broken, first, err := auditTrails(ctx, pool); err != nil {
		fail(audited, err)
	} else {
		add(audited, broken == 0 && items > 0, "%d items replayed, %d trails broken%s", items, broken, first)
	}

	return append(out, faultCheck(o, faults))
}

// faultCheck wants every planned fault injected while payments were
// still draining (at least MinKills of the kills), and undone.
func faultCheck(o Options, faults []injected) demo.Check {
	byKind := map[string]int{}
	killsInDrain := 0
	var failed, late []string
	for _, f := range faults {
		byKind[f.kind]++
		switch {
		case f.err != nil:
			failed = append(failed, f.kind+": "+f.err.Error())
		case f.kind == faultKill && !f.afterDrain:
			killsInDrain++
		case f.kind != faultKill && f.afterDrain:
			late = append(late, f.kind)
		}
	}
	var absent []string
	for _, k := range faultKinds[1:] {
		if byKind[k] == 0 {
			absent = append(absent, k)
		}
	}
	detail := fmt.Sprintf("%d kills during the drain (at least %d wanted), %d after it; every other fault once", killsInDrain, o.MinKills, byKind[faultKill]-killsInDrain)
	for _, l := range []struct {
		what string
		list []string
	}{{"not injected", absent}, {"only after the last payment settled (make the drain longer)", late}, {"failed", failed}} {
		if len(l.list) > 0 {
			detail += "; " + l.what + ": " + strings.Join(l.list, "; ")
		}
	}
	return demo.Check{Name: "every planned fault injected during the drain and undone", OK: killsInDrain >= o.MinKills && len(absent)+len(late)+len(failed) == 0, Detail: detail}
}

// execRuns lists the runs' statuses, open or closed, of each payment queue item's
// execution workflow, asking visibility by workflow id 100 at a time (as
// the dispatcher's reconcile does).
// executions is what visibility shows of the payments' executions.
type executions struct {
	runs          map[string][]string // workflow id → its runs' statuses
	executed, own int                 // payments with an execution; of them, by their own workflow
	batches       int                 // batch executions that ran
}

// execRuns asks visibility for every payment's own execution workflow and
// every batch execution a payment is settled under: a payment's execution
// is its own workflow's run if it has one (PER_ITEM, or handed over), else
// the run of the batch execution its queue row names.
func execRuns(ctx context.Context, pool *pgxpool.Pool, addr string) (executions, error) {
	r := executions{runs: map[string][]string{}}
	type item struct{ own, under string }
	var items []item
	rows, err := pool.Query(ctx, `SELECT item_id, coalesce(exec_workflow_id, '') FROM exec_queue WHERE item_type = $1`, payment.ItemType)
	if err != nil {
		return r, err
	}
	for rows.Next() {
		var id, under string
		if err := rows.Scan(&id, &under); err != nil {
			rows.Close()
			return r, err
		}
		items = append(items, item{dispatch.ExecWorkflowID(payment.ItemType, id), under})
	}
	rows.Close()
	seen := map[string]bool{}
	var ids []string
	for _, it := range items {
		for _, id := range []string{it.own, it.under} {
			if id != "" && !seen[id] {
				seen[id] = true
				ids = append(ids, "'"+id+"'")
			}
		}
	}
	c, err := client.DialContext(ctx, client.Options{HostPort: addr})
	if err != nil {
		return r, err
	}
	defer c.Close()
	for start := 0; start < len(ids); start += 100 {
		query := "WorkflowId IN (" + strings.Join(ids[start:min(start+100, len(ids))], ",") + ")"
		var token []byte
		for {
			resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: 1000, NextPageToken: token, Query: query})
			if err != nil {
				return r, err
			}
			for _, e := range resp.Executions {
				id := e.Execution.WorkflowId
				r.runs[id] = append(r.runs[id], strings.TrimPrefix(e.Status.String(), "WORKFLOW_EXECUTION_STATUS_"))
			}
			if token = resp.NextPageToken; len(token) == 0 {
				break
			}
		}
	}
	for _, it := range items {
		switch {
		case len(r.runs[it.own]) > 0:
			r.executed++
			r.own++
		case it.under != "" && it.under != it.own && len(r.runs[it.under]) > 0:
			r.executed++
		}
	}
	for id := range r.runs {
		if strings.HasPrefix(id, "exec-batch-") {
			r.batches++
		}
	}
	return r, nil
}

// auditTrails replays each payment queue item's audit rows: enqueued
// READY, then each row leaving the status the last one reached, ending at
// the item's status. Claims are audited per batch (one row for the
// batch, the item carrying the batch's id), so READY → CLAIMED is taken
// from the claiming batch's row; so are a Phase A chunk's enqueues (one
// row for the chunk's init workflow, which the item names).
func auditTrails(ctx context.Context, pool *pgxpool.Pool) (items, broken int, first string, err error) {
	claimed, enqueued := map[string]bool{}, map[string]bool{}
	rows, err := pool.Query(ctx, `SELECT action, batch_id FROM dispatch_audit_log
		WHERE item_type = $1 AND item_id IS NULL AND action IN ('CLAIMED', 'ENQUEUED') AND batch_id IS NOT NULL`, payment.ItemType)
	if err != nil {
		return 0, 0, "", err
	}
	for rows.Next() {
		var action, b string
		if err := rows.Scan(&action, &b); err != nil {
			rows.Close()
			return 0, 0, "", err
		}
		if action == "CLAIMED" {
			claimed[b] = true
		} else {
			enqueued[b] = true
		}
	}
	rows.Close()
	type row struct{ batch, before, after string }
	trails := map[string][]row{}
	rows, err = pool.Query(ctx, `SELECT item_id, coalesce(batch_id, ''), coalesce(status_before, ''), coalesce(status_after, '')
		FROM dispatch_audit_log WHERE item_type = $1 AND item_id IS NOT NULL ORDER BY audit_id`, payment.ItemType)
	if err != nil {
		return 0, 0, "", err
	}
	for rows.Next() {
		var id string
		var r row
		if err := rows.Scan(&id, &r.batch, &r.before, &r.after); err != nil {
			rows.Close()
			return 0, 0, "", err
		}
		trails[id] = append(trails[id], r)
	}
	rows.Close()
	rows, err = pool.Query(ctx, `SELECT item_id, queue_status, coalesce(dispatch_batch_id, ''), coalesce(init_workflow_id, '')
		FROM exec_queue WHERE item_type = $1`, payment.ItemType)
	if err != nil {
		return 0, 0, "", err
	}
	defer rows.Close()
	for rows.Next() {
		var id, status, batch, init string
		if err := rows.Scan(&id, &status, &batch, &init); err != nil {
			return 0, 0, "", err
		}
		items++
		step := func(from, to, batch string) bool {
			return from == to || (from == "READY" && to == "CLAIMED" && claimed[batch])
		}
		trail := trails[id]
		// Enqueued: by its chunk's row, or by a row of its own.
		at, ok := "", len(trail) > 0 && trail[0].before == "" && trail[0].after == "READY"
		switch {
		case ok:
			at, trail = "READY", trail[1:]
		case init != "" && enqueued[init]:
			at, ok = "READY", true
		}
		for _, r := range trail {
			if ok = ok && step(at, r.before, r.batch); !ok {
				break
			}
			at = r.after
		}
		if ok {
			ok = step(at, status, batch)
		}
		if !ok {
			broken++
			if first == "" {
				first = fmt.Sprintf("; first: %s, %s now, trail %v", id, status, trails[id])
			}
		}
	}
	return items, broken, first, rows.Err()
}
