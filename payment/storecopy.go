package payment

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/pgcopy"
	"github.com/paydispatch/paydispatch/internal/pgerr"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
)

// copyAtLeast is the fewest payments COPYed: below it, the subtransaction
// and the COPY's round trips cost more than the probes they save (a
// payment sent alone is one row).
const copyAtLeast = 100

// phaseAColumns are the columns storePhaseA copies, in phaseARows' order;
// the others take their defaults, as StorePhaseA leaves them.
var phaseAColumns = []string{"payment_id", "external_id", "tenant_id", "debtor_account", "amount", "currency", "creditor_name",
	"creditor_iban", "creditor_bic", "remittance_info", "requested_execution_time",
	"status", "status_reason", "scheduled_execution_time", "context", "rail", "execution_date", "priority", "details"}

// storePhaseA stores a chunk's payments with Phase A's verdicts, in tx,
// and returns the keys it stored. A chunk none of whose payments is
// stored yet (nearly every one) is COPYed: PostgreSQL then writes the
// rows a page at a time, and does not probe each key before its insert
// as ON CONFLICT does (together about half of the statement's cost). A
// payment stored before (cancelled while it waited, or stored by another
// run of the same workflow) fails the COPY on its key: the chunk is then
// stored by StorePhaseA, which leaves those.
func storePhaseA(ctx context.Context, tx pgx.Tx, p dbsqlc.StorePhaseAParams) ([]string, error) {
	if len(p.PaymentIds) < copyAtLeast {
		return dbsqlc.New(tx).StorePhaseA(ctx, p)
	}
	if err := phaseAArrays(p); err != nil {
		return nil, err
	}
	// The payments' statement trigger keeps every row the COPY writes in
	// its transition table (changed_payments), in memory up to work_mem:
	// at the default 4 MB a chunk of 10,000 spilled 5 MB to a temporary
	// file and read it back, about a tenth of the intake's CPU with the
	// write-ahead log's own copying. A chunk's rows fit in 64 MB.
	if _, err := tx.Exec(ctx, "SET LOCAL work_mem = '64MB'"); err != nil {
		return nil, fmt.Errorf("payment: work_mem for a chunk's transition table: %w", err)
	}
	rows, err := phaseARows(p)
	if err != nil {
		return nil, err
	}
	err = pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		n, err := pgcopy.Copy(ctx, sp, "payments", phaseAColumns, rows)
		if err == nil && int(n) != len(p.PaymentIds) {
			err = fmt.Errorf("copied %d of %d payments", n, len(p.PaymentIds))
		}
		return err
	})
	if pgerr.Is(err, pgerr.UniqueViolation) {
		return dbsqlc.New(tx).StorePhaseA(ctx, p)
	}
	if err != nil {
		return nil, err
	}
	return p.PaymentIds, nil
}

// phaseARows are StorePhaseA's arrays as COPY rows, each value written
// by its column's type (pgx's CopyFrom looks up a plan for each of a
// chunk's 190,000 values), with its NULLs: "" for none, a scheduled time
// only for a SCHEDULED payment, an execution date before 1970 for none,
// NORMAL for no priority.
func phaseARows(p dbsqlc.StorePhaseAParams) (*pgcopy.Rows, error) {
	rows := pgcopy.NewRows(len(p.PaymentIds) * 640)
	noDate := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range p.PaymentIds {
		rows.Row(len(phaseAColumns))
		rows.Text(p.PaymentIds[i])
		rows.Text(p.ExternalIds[i])
		rows.Text(p.TenantIds[i])
		rows.Text(p.DebtorAccounts[i])
		if err := rows.Numeric(p.Amounts[i]); err != nil {
			return nil, fmt.Errorf("payment %s: %w", p.PaymentIds[i], err)
		}
		rows.Text(p.Currencies[i])
		rows.Text(p.CreditorNames[i])
		rows.TextOrNull(p.CreditorIbans[i])
		rows.TextOrNull(p.CreditorBics[i])
		rows.TextOrNull(p.RemittanceInfos[i])
		rows.Timestamptz(p.RequestedExecutionTimes[i])
		rows.Text(p.Statuses[i])
		rows.TextOrNull(p.StatusReasons[i])
		if p.Statuses[i] == string(StatusScheduled) {
			rows.Timestamptz(p.ScheduledExecutionTimes[i])
		} else {
			rows.Null()
		}
		rows.JSONBOrNull(p.Contexts[i])
		rows.TextOrNull(p.Rails[i])
		if p.ExecutionDates[i].Before(noDate) {
			rows.Null()
		} else {
			rows.Date(p.ExecutionDates[i])
		}
		if p.Priorities[i] == "" {
			rows.Text(string(PriorityNormal))
		} else {
			rows.Text(p.Priorities[i])
		}
		rows.JSONBOrNull(p.Details[i])
	}
	return rows, nil
}

// phaseAArrays refuses arrays of different lengths, which StorePhaseA's
// unnest would have filled with NULLs and the table refused.
func phaseAArrays(p dbsqlc.StorePhaseAParams) error {
	for _, l := range []int{len(p.ExternalIds), len(p.TenantIds), len(p.DebtorAccounts), len(p.Amounts), len(p.Currencies),
		len(p.CreditorNames), len(p.CreditorIbans), len(p.CreditorBics), len(p.RemittanceInfos), len(p.RequestedExecutionTimes),
		len(p.Statuses), len(p.StatusReasons), len(p.ScheduledExecutionTimes), len(p.Contexts), len(p.Rails),
		len(p.ExecutionDates), len(p.Priorities), len(p.Details)} {
		if l != len(p.PaymentIds) {
			return fmt.Errorf("payment: Phase A's verdicts: arrays of %d and %d payments", len(p.PaymentIds), l)
		}
	}
	return nil
}

// claimByCopy claims ids none of which is claimed yet (nearly every
// file's) with one COPY, in a subtransaction: the keys, all claimed now.
// One claimed before fails the COPY on its key and claims nothing: nil,
// and the caller claims them with ClaimKeys, which finds the others; so
// do fewer than copyAtLeast.
func claimByCopy(ctx context.Context, tx pgx.Tx, ids, tenants, keys, workflows []string) ([]string, error) {
	if len(keys) < copyAtLeast {
		return nil, nil
	}
	rows := pgcopy.NewRows(len(keys) * 160)
	for i := range keys {
		rows.Row(4)
		rows.Text(ids[i])
		rows.Text(tenants[i])
		rows.Text(keys[i])
		rows.Text(workflows[i])
	}
	err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		n, err := pgcopy.Copy(ctx, sp, "payment_keys", []string{"external_id", "tenant_id", "payment_id", "init_workflow_id"}, rows)
		if err == nil && int(n) != len(keys) {
			err = fmt.Errorf("copied %d of %d", n, len(keys))
		}
		return err
	})
	if pgerr.Is(err, pgerr.UniqueViolation) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("payment: claim %d payment ids: %w", len(keys), err)
	}
	return keys, nil
}
