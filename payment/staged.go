package payment

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/pgcopy"
	"github.com/paydispatch/paydispatch/internal/txdetail"
	"github.com/paydispatch/paydispatch/money"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
)

// staged is payments taken in and not stored yet, as arrays of their
// columns (the i-th of each is the i-th payment's; "" for none): how an
// intake row holds a chunk, so that a chunk is written and read in one
// statement and its payments' rows are written once, by Phase A.
type staged struct {
	keys, externalIDs, tenantIDs, debtorAccounts []string
	amounts                                      []decimal.Decimal
	currencies, creditorNames                    []string
	creditorIBANs, creditorBICs, remittanceInfos []string
	requestedTimes                               []time.Time
	// rails are the rails chosen at intake; "" for a payment staged
	// before (Phase A routes it).
	rails []string
	// priorities are the payments' priorities ("" for NORMAL; none in a
	// row staged before priorities).
	priorities []string
	// details are the payments' txdetail.Details as JSON objects' text
	// ("" for none: nearly every payment, which then costs no encoding).
	details []string
	// receivedAt is when intake took them in (read back from their row).
	receivedAt time.Time
}

// newStaged is an empty staged with room for n requests: a bulk file
// stages hundreds of thousands, and fourteen columns grown by append
// copied each several times over.
func newStaged(n int) staged {
	return staged{
		keys: make([]string, 0, n), externalIDs: make([]string, 0, n), tenantIDs: make([]string, 0, n),
		debtorAccounts: make([]string, 0, n), amounts: make([]decimal.Decimal, 0, n), currencies: make([]string, 0, n),
		creditorNames: make([]string, 0, n), creditorIBANs: make([]string, 0, n), creditorBICs: make([]string, 0, n),
		remittanceInfos: make([]string, 0, n), requestedTimes: make([]time.Time, 0, n), rails: make([]string, 0, n),
		priorities: make([]string, 0, n), details: make([]string, 0, n),
	}
}

// add appends a validated request under its key, with its parsed amount.
func (st *staged) add(key string, r Request, amount decimal.Decimal) {
	st.keys = append(st.keys, key)
	st.externalIDs = append(st.externalIDs, r.PaymentID)
	st.tenantIDs = append(st.tenantIDs, r.TenantID)
	st.debtorAccounts = append(st.debtorAccounts, r.DebtorAccount)
	st.amounts = append(st.amounts, amount)
	st.currencies = append(st.currencies, r.Currency)
	st.creditorNames = append(st.creditorNames, r.Creditor.Name)
	st.creditorIBANs = append(st.creditorIBANs, r.Creditor.IBAN)
	st.creditorBICs = append(st.creditorBICs, r.Creditor.BIC)
	st.remittanceInfos = append(st.remittanceInfos, r.RemittanceInfo)
	st.requestedTimes = append(st.requestedTimes, r.RequestedExecutionTime)
	st.rails = append(st.rails, r.Rail)
	st.priorities = append(st.priorities, string(r.Priority))
	st.details = append(st.details, detailsText(r.Details))
}

// detailsText is d as its column holds it: "" for none, else its JSON.
func detailsText(d txdetail.Details) string {
	if d.IsZero() {
		return ""
	}
	b, err := json.Marshal(d)
	if err != nil {
		panic("payment: txdetail.Details cannot be encoded: " + err.Error()) // strings only
	}
	return string(b)
}

// detailsOf reads a details column ("" or NULL: none).
func detailsOf(text []byte) (txdetail.Details, error) {
	var d txdetail.Details
	if len(text) == 0 || string(text) == "null" {
		return d, nil
	}
	if err := json.Unmarshal(text, &d); err != nil {
		return txdetail.Details{}, fmt.Errorf("payment: stored details: %w", err)
	}
	return d, nil
}

// pick is the payments at the indexes.
func (st staged) pick(at []int) staged {
	return staged{
		keys: pick(st.keys, at), externalIDs: pick(st.externalIDs, at), tenantIDs: pick(st.tenantIDs, at),
		debtorAccounts: pick(st.debtorAccounts, at), amounts: pick(st.amounts, at), currencies: pick(st.currencies, at),
		creditorNames: pick(st.creditorNames, at), creditorIBANs: pick(st.creditorIBANs, at),
		creditorBICs: pick(st.creditorBICs, at), remittanceInfos: pick(st.remittanceInfos, at),
		requestedTimes: pick(st.requestedTimes, at), rails: pick(st.rails, at), priorities: pick(st.priorities, at),
		details: pick(st.details, at),
	}
}

// request is the i-th payment's request, its amount with its currency's
// minor units (as requestOf reads a stored one).
func (st staged) request(i int) Request {
	// check has read every payment's details.
	d, _ := detailsOf([]byte(st.details[i]))
	return Request{
		PaymentID: st.externalIDs[i], TenantID: st.tenantIDs[i], DebtorAccount: st.debtorAccounts[i],
		Amount: amountText(st.amounts[i], st.currencies[i]), Currency: st.currencies[i],
		Creditor:               Creditor{Name: st.creditorNames[i], IBAN: st.creditorIBANs[i], BIC: st.creditorBICs[i]},
		RequestedExecutionTime: st.requestedTimes[i].UTC(), RemittanceInfo: st.remittanceInfos[i], Rail: st.rail(i),
		Priority: st.priority(i), Details: d,
	}
}

// priority is the i-th payment's priority as sent ("" for none, and for
// one staged before priorities were kept: NORMAL).
func (st staged) priority(i int) Priority {
	if i < len(st.priorities) {
		return Priority(st.priorities[i])
	}
	return ""
}

// priorityList is every payment's priority as sent, one per payment.
func (st staged) priorityList() []string {
	out := make([]string, len(st.keys))
	for i := range out {
		out[i] = string(st.priority(i))
	}
	return out
}

// rail is the i-th payment's rail: "" for one staged before rails were
// kept (its row's rails are fewer than its payments).
func (st staged) rail(i int) string {
	if i < len(st.rails) {
		return st.rails[i]
	}
	return ""
}

// check refuses arrays of different lengths: a row no statement of ours
// writes.
func (st staged) check() error {
	n := len(st.keys)
	for _, l := range []int{len(st.externalIDs), len(st.tenantIDs), len(st.debtorAccounts), len(st.amounts), len(st.currencies),
		len(st.creditorNames), len(st.creditorIBANs), len(st.creditorBICs), len(st.remittanceInfos), len(st.requestedTimes),
		len(st.details)} {
		if l != n {
			return fmt.Errorf("an intake row's columns hold %d and %d payments", n, l)
		}
	}
	for _, d := range st.details {
		if _, err := detailsOf([]byte(d)); err != nil {
			return err
		}
	}
	return nil
}

func (st staged) intakeParams(initWorkflowID string) dbsqlc.StageIntakeParams {
	return dbsqlc.StageIntakeParams{
		InitWorkflowID: initWorkflowID, PaymentIds: st.keys, ExternalIds: st.externalIDs, TenantIds: st.tenantIDs,
		DebtorAccounts: st.debtorAccounts, Amounts: amountTexts(st.amounts), Currencies: st.currencies, CreditorNames: st.creditorNames,
		CreditorIbans: st.creditorIBANs, CreditorBics: st.creditorBICs, RemittanceInfos: st.remittanceInfos,
		RequestedExecutionTimes: st.requestedTimes, Rails: st.rails, Priorities: st.priorityList(), Details: st.details,
	}
}

// stageIntake runs StageIntake in tx with its arrays encoded here, each
// element appended as it is: pgx's array codec, an encode plan a value,
// spent half a second of a 500,000-payment file's handler on them.
func stageIntake(ctx context.Context, tx pgx.Tx, p dbsqlc.StageIntakeParams) error {
	a := pgcopy.TextArray
	_, err := pgcopy.Exec(ctx, tx, dbsqlc.StageIntakeSQL,
		pgcopy.TextParam(p.InitWorkflowID), a(p.PaymentIds), a(p.ExternalIds), a(p.TenantIds), a(p.DebtorAccounts),
		a(p.Amounts), a(p.Currencies), a(p.CreditorNames), a(p.CreditorIbans),
		a(p.CreditorBics), a(p.RemittanceInfos), pgcopy.TimestamptzArray(p.RequestedExecutionTimes), a(p.Rails),
		a(p.Priorities), a(p.Details))
	return err
}

// amountTexts are amounts as StageIntake takes them: each with its
// scale, so that the numeric staged is the decimal taken in ("1.50"
// stays 1.50, as the decimal's binary encoding kept it).
func amountTexts(ds []decimal.Decimal) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = money.StringFixed(d, max(-d.Exponent(), 0))
	}
	return out
}

// parseAmounts are amounts read back from StageIntake's text.
func parseAmounts(ss []string) ([]decimal.Decimal, error) {
	out := make([]decimal.Decimal, len(ss))
	for i, s := range ss {
		d, err := money.ParseDecimal(s, money.Unsigned)
		if err != nil {
			return nil, fmt.Errorf("an intake row's amount %d: %w", i, err)
		}
		out[i] = d
	}
	return out, nil
}

// storeParams is the statement that stores the payments with Phase A's
// verdicts: statuses[i] and, per status, reasons[i] or times[i] and
// contexts[i]; rails[i] and dates[i] (before 1970: none) where they
// execute.
func (st staged) storeParams(statuses, reasons []string, times []time.Time, contexts, rails []string, dates []time.Time) dbsqlc.StorePhaseAParams {
	return dbsqlc.StorePhaseAParams{
		PaymentIds: st.keys, ExternalIds: st.externalIDs, TenantIds: st.tenantIDs, DebtorAccounts: st.debtorAccounts,
		Amounts: st.amounts, Currencies: st.currencies, CreditorNames: st.creditorNames, CreditorIbans: st.creditorIBANs,
		CreditorBics: st.creditorBICs, RemittanceInfos: st.remittanceInfos, RequestedExecutionTimes: st.requestedTimes,
		Statuses: statuses, StatusReasons: reasons, ScheduledExecutionTimes: times, Contexts: contexts,
		Rails: rails, ExecutionDates: dates, Priorities: st.priorityList(), Details: st.details,
	}
}
