package payment

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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
	err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		n, err := sp.CopyFrom(ctx, pgx.Identifier{"payments"}, phaseAColumns, &phaseARows{p: p, at: -1})
		if err == nil && int(n) != len(p.PaymentIds) {
			err = fmt.Errorf("copied %d of %d payments", n, len(p.PaymentIds))
		}
		return err
	})
	if isUniqueViolation(err) {
		return dbsqlc.New(tx).StorePhaseA(ctx, p)
	}
	if err != nil {
		return nil, err
	}
	return p.PaymentIds, nil
}

// isUniqueViolation: err is PostgreSQL's refusal of a key that exists.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// phaseARows are StorePhaseA's arrays as COPY rows, with its NULLs: ""
// for none, a scheduled time only for a SCHEDULED payment, an execution
// date before 1970 for none, NORMAL for no priority.
type phaseARows struct {
	p   dbsqlc.StorePhaseAParams
	at  int
	row [19]any
}

func (r *phaseARows) Next() bool {
	r.at++
	return r.at < len(r.p.PaymentIds)
}

// Values gives pointers into the arrays, not their values: a string or a
// time in an interface is a copy on the heap, nineteen a payment.
func (r *phaseARows) Values() ([]any, error) {
	p, i := r.p, r.at
	var scheduled any
	if p.Statuses[i] == string(StatusScheduled) {
		scheduled = &p.ScheduledExecutionTimes[i]
	}
	var date any
	if !p.ExecutionDates[i].Before(time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)) {
		date = &p.ExecutionDates[i]
	}
	var priority any = string(PriorityNormal)
	if p.Priorities[i] != "" {
		priority = &p.Priorities[i]
	}
	r.row = [19]any{&p.PaymentIds[i], &p.ExternalIds[i], &p.TenantIds[i], &p.DebtorAccounts[i], &p.Amounts[i], &p.Currencies[i],
		&p.CreditorNames[i], orNull(&p.CreditorIbans[i]), orNull(&p.CreditorBics[i]), orNull(&p.RemittanceInfos[i]),
		&p.RequestedExecutionTimes[i], &p.Statuses[i], orNull(&p.StatusReasons[i]), scheduled, orNull(&p.Contexts[i]),
		orNull(&p.Rails[i]), date, priority, orNull(&p.Details[i])}
	return r.row[:], nil
}

func (r *phaseARows) Err() error { return nil }

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

// orNull is s, or NULL for "".
func orNull(s *string) any {
	if *s == "" {
		return nil
	}
	return s
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
	err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		i := -1
		var row [4]any
		n, err := sp.CopyFrom(ctx, pgx.Identifier{"payment_keys"}, []string{"external_id", "tenant_id", "payment_id", "init_workflow_id"},
			pgx.CopyFromFunc(func() ([]any, error) {
				if i++; i == len(keys) {
					return nil, nil
				}
				row = [4]any{&ids[i], &tenants[i], &keys[i], &workflows[i]}
				return row[:], nil
			}))
		if err == nil && int(n) != len(keys) {
			err = fmt.Errorf("copied %d of %d", n, len(keys))
		}
		return err
	})
	if isUniqueViolation(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("payment: claim %d payment ids: %w", len(keys), err)
	}
	return keys, nil
}
