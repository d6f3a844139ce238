package payment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"go.temporal.io/sdk/temporal"

	"github.com/paydispatch/paydispatch/bankid"
	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/internal/ptr"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/money"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/queue"
)

// The types of the application errors Phase A and the execution return:
// Temporal's retry policies name them, so they are constants, never text.
const (
	// ErrTypeRejected: a business refusal (validation, enrichment, a
	// rule); the payment ends REJECTED, nothing is retried.
	ErrTypeRejected = "REJECTED"
	// ErrTypeConflict: the payment id belongs to a different payment.
	ErrTypeConflict = "CONFLICT"
	// ErrTypeWrongStatus: a status change found the payment elsewhere.
	ErrTypeWrongStatus = "WRONG_STATUS"
)

func nonRetryable(errType string, err error) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), errType, err)
}

// Rules are the business rules Phase A applies.
type Rules struct {
	// MaxAmount caps a single payment (any currency); zero: no cap.
	MaxAmount decimal.Decimal
	// BlockedCountries refuses creditors in these countries (ISO 3166 alpha-2).
	BlockedCountries []string
}

// apply refuses what the rules forbid, naming the rule; it returns the
// rules passed.
func (rs Rules) apply(r Request, m Money, e Enrichment) ([]string, error) {
	if !rs.MaxAmount.IsZero() && m.Amount.GreaterThan(rs.MaxAmount) {
		return nil, fmt.Errorf("rule MAX_AMOUNT: %s %s is above the limit of %s", m.Amount, r.Currency, rs.MaxAmount)
	}
	for _, c := range rs.BlockedCountries {
		if strings.EqualFold(c, e.CreditorCountry) {
			return nil, fmt.Errorf("rule BLOCKED_COUNTRY: creditor country %s is blocked", e.CreditorCountry)
		}
	}
	return []string{"MAX_AMOUNT", "BLOCKED_COUNTRY"}, nil
}

// Enrichment is what Phase A adds to a request: what execution needs to
// know of the debtor's account, and of the creditor.
type Enrichment struct {
	CreditorCountry string
	CreditorIBAN    string // normalized: upper case, no spaces
	// The debtor's account (ledger/account), as Phase A found it. Empty in
	// contexts made before Phase A looked accounts up: the execution reads
	// the account itself then. AccountKey is its key in the ledger (empty
	// in contexts made before accounts were scoped to tenants: the
	// request's debtorAccount is then the key).
	AccountKey      string `json:",omitempty"`
	AccountCurrency string `json:",omitempty"`
	LimitBased      bool   `json:",omitempty"`
	// FXNeeded: the payment's currency is not the account's.
	FXNeeded bool `json:",omitempty"`
}

// enrich derives what later steps need from the request.
func enrich(r Request) (Enrichment, error) {
	e := Enrichment{CreditorIBAN: bankid.Electronic(r.Creditor.IBAN)}
	if len(e.CreditorIBAN) < 2 {
		return e, errors.New("creditor country unknown: no IBAN")
	}
	e.CreditorCountry = e.CreditorIBAN[:2]
	return e, nil
}

// debtorAccount records what execution needs of the payment's account. An
// unknown account and another tenant's are refused alike, so a tenant
// learns nothing of accounts that are not its own.
func (e *Enrichment) debtorAccount(r Request, accounts map[account.Ref]account.Summary) error {
	acct, ok := accounts[account.Ref{TenantID: r.TenantID, ExternalID: r.DebtorAccount}]
	if !ok {
		return fmt.Errorf("debtorAccount: no account %q for tenant %s", r.DebtorAccount, r.TenantID)
	}
	e.AccountKey, e.AccountCurrency, e.LimitBased, e.FXNeeded = acct.AccountID, acct.Currency, acct.LimitBased, acct.Currency != r.Currency
	return nil
}

// lookupAccounts finds the payments' debtor accounts, each in its
// tenant's ids, in one query.
func (a *InitActivities) lookupAccounts(ctx context.Context, rs []Request) (map[account.Ref]account.Summary, error) {
	refs := make([]account.Ref, len(rs))
	for i, r := range rs {
		refs[i] = account.Ref{TenantID: r.TenantID, ExternalID: r.DebtorAccount}
	}
	accounts, err := account.Lookup(ctx, a.cfg.Store.db, refs)
	if err != nil {
		return nil, fmt.Errorf("payment: debtor accounts: %w", err)
	}
	return accounts, nil
}

// verdict is Phase A's judgement of one payment, before anything is stored.
type verdict struct {
	r Request
	// money is the payment's amount, kept on a rejected payment too when
	// the amount and currency themselves are valid (so its status shows
	// what was refused).
	money *Money
	enr   Enrichment
	rules []string
	// refusal, when set, ends the payment REJECTED with it as the reason.
	refusal error
}

// judge validates, enriches and applies the rules to each payment: the one
// code path of Phase A's checks, for a single payment and a bulk chunk.
// accounts are the debtor accounts found (lookupAccounts).
func (a *InitActivities) judge(rs []Request, now time.Time, accounts map[account.Ref]account.Summary) []verdict {
	out := make([]verdict, len(rs))
	for i, r := range rs {
		v := verdict{r: r}
		m, err := Validate(r, now)
		if m.Currency != "" {
			v.money = &m
		}
		if err == nil {
			v.enr, err = enrich(r)
		}
		if err == nil {
			err = v.enr.debtorAccount(r, accounts)
		}
		if err == nil {
			v.rules, err = a.cfg.Rules.apply(r, m, v.enr)
		}
		v.refusal = err
		out[i] = v
	}
	return out
}

// InitResult is how Phase A ended for one payment.
type InitResult struct {
	// PaymentID is the tenant's id of the payment, Key its key.
	PaymentID              string
	Key                    string `json:",omitempty"`
	Status                 Status
	Reason                 string
	ScheduledExecutionTime time.Time
	// Rail and ExecutionDate: where and on which business day it
	// executes (empty without rails); Rolled: its tenant's ROLL moved it
	// past a cut-off.
	Rail          string        `json:",omitempty"`
	ExecutionDate calendar.Date `json:",omitzero"`
	Rolled        bool          `json:",omitempty"`
}

// InitActivities hold Phase A's I/O; each is idempotent.
type InitActivities struct {
	cfg InitConfig
}

// NewInitActivities returns Phase A's activities for cfg.
func NewInitActivities(cfg InitConfig) *InitActivities { return &InitActivities{cfg: cfg} }

// InitConfig is what Phase A's activities run with.
type InitConfig struct {
	Store *Store
	Queue *queue.Queue
	Rules Rules
	// Pacer assigns slots when PAYMENT names a pacing config; nil: never.
	Pacer Pacer
	// Rails are the rails, their business days and the tenants' cut-off
	// rules (routing.Resolver); nil: no rails, no cut-off (each payment
	// paced by its tenant's config or PAYMENT's, as before rails).
	Rails Rails
	// CutoffGuard is how long before a cut-off the last slot of a day is
	// (default DefaultCutoffGuard).
	CutoffGuard time.Duration
	// Controls check the accepted payments before any takes a slot (in
	// order; the most severe decision wins).
	Controls []Control
	Now      func() time.Time
	Log      *slog.Logger
}

// initIntake is Phase A for the payments waiting in the intake row of
// the workflow initWorkflowID (found false: there is none, it was stored
// before): judge each, give the accepted ones their execution times (one
// call to the limiter per pacing config), then, in one transaction, store
// each payment once, REJECTED with its reason or SCHEDULED with its
// context, enqueue the scheduled ones READY and delete the intake row. A
// retry, or another run for the same row, redoes the judgement: a
// payment is stored once, and only the payments this run stored are
// enqueued; slots are keyed by the payment's key, so a second run gets
// the same ones back.
func (a *InitActivities) initIntake(ctx context.Context, initWorkflowID string) (results []InitResult, found bool, err error) {
	st, found, err := a.cfg.Store.intake(ctx, initWorkflowID)
	if err != nil || !found {
		return nil, found, err
	}
	ks := st.keys
	rs := make([]Request, len(ks))
	for i := range rs {
		rs[i] = st.request(i)
	}
	accounts, err := a.lookupAccounts(ctx, rs)
	if err != nil {
		return nil, true, err
	}
	// Judged as of their receipt, as intake judged them: a Phase A held
	// up (an outage, a backlog) never refuses what the 202 accepted for
	// a requested time that has since passed.
	verdicts := a.judge(rs, st.receivedAt, accounts)
	var accepted []int
	for i, v := range verdicts {
		if v.refusal == nil {
			accepted = append(accepted, i)
		}
	}
	// The controls, before any slot is taken: a payment they stop takes
	// none.
	decided, err := a.control(ctx, ks, verdicts, accepted, initWorkflowID)
	if err != nil {
		return nil, true, err
	}
	stopped := map[string]placement{}
	accepted = slices.DeleteFunc(accepted, func(i int) bool {
		d, ok := decided[i]
		switch {
		case !ok || d.Action == ActionWarn:
			return false
		case d.Action == ActionReject:
			verdicts[i].refusal = errors.New(d.Reason)
		case d.Action == ActionHold:
			stopped[ks[i]] = placement{status: StatusHeld, reason: d.Reason, rail: rs[i].Rail}
		default:
			stopped[ks[i]] = placement{status: StatusAwaitingApproval, reason: d.Reason, rail: rs[i].Rail}
		}
		return true
	})
	// Within a chunk, HIGH payments take their slots first, LOW ones last
	// (the rest of the order: priorityOrder).
	slices.SortStableFunc(accepted, func(x, y int) int { return rs[x].Priority.orDefault().rank() - rs[y].Priority.orDefault().rank() })
	paused, err := a.pausedScopes(ctx, a.cfg.Store.q, initWorkflowID)
	if err != nil {
		return nil, true, err
	}
	places, err := a.place(ctx, pick(ks, accepted), pick(rs, accepted), pick(verdicts, accepted), paused)
	if err != nil {
		return nil, true, err
	}
	if places == nil {
		places = make(map[string]placement, len(stopped))
	}
	for k, pl := range stopped {
		places[k] = pl
	}
	for i, d := range decided {
		if pl, ok := places[ks[i]]; ok && d.Action == ActionWarn && pl.reason == "" {
			pl.reason = d.Reason
			places[ks[i]] = pl
		}
	}
	n := len(verdicts)
	results = make([]InitResult, n)
	statuses, reasons, contexts := make([]string, n), make([]string, n), make([]string, n)
	times, dates, rails := make([]time.Time, n), make([]time.Time, n), make([]string, n)
	enqueues := make(map[string]queue.EnqueueParams, len(accepted))
	var pausedKeys, pausedTags []string
	// The payments' executions go on this trace (their span is a child
	// of this activity's, when tracing is on: empty otherwise).
	tp := traceParent(ctx)
	for i, v := range verdicts {
		key := ks[i]
		results[i] = InitResult{PaymentID: v.r.PaymentID, Key: key}
		pl, ok := places[key]
		if v.refusal == nil && !ok {
			return nil, true, fmt.Errorf("payment %s: Phase A placed it nowhere", key)
		}
		if v.refusal != nil {
			pl = placement{status: StatusRejected, reason: v.refusal.Error()}
		}
		results[i].Status, results[i].Reason = pl.status, pl.reason
		statuses[i], reasons[i], rails[i] = string(pl.status), pl.reason, pl.rail
		times[i], dates[i] = v.r.RequestedExecutionTime, time.Time{}
		if !pl.date.IsZero() {
			dates[i] = pl.date.In(time.UTC)
		}
		results[i].Rail, results[i].ExecutionDate, results[i].Rolled = pl.rail, pl.date, pl.rolled
		if pl.status == StatusRejected {
			continue
		}
		pc, err := contextJSON(v, pl, tp)
		if err != nil {
			return nil, true, err
		}
		contexts[i] = string(pc)
		if pl.status == StatusHeld || pl.status == StatusAwaitingApproval {
			continue // enqueued when an operator releases it, or it is approved
		}
		if pl.pausedBy != "" {
			// Its scope is paused: it waits unqueued, at its requested
			// time (its place in the order), for the resume.
			times[i], results[i].ScheduledExecutionTime = v.r.RequestedExecutionTime, v.r.RequestedExecutionTime.UTC()
			pausedKeys, pausedTags = append(pausedKeys, key), append(pausedTags, pl.pausedBy)
			continue
		}
		times[i] = pl.slot.At
		enqueues[key] = queue.EnqueueParams{
			ItemType: ItemType, ItemID: key, TenantID: v.r.TenantID, ScheduledExecTime: pl.slot.At,
			InitWorkflowID: initWorkflowID, Paced: pl.slot.Paced,
		}
		results[i].ScheduledExecutionTime = pl.slot.At.UTC()
	}
	// The payments, queue items and intake row in a few set-based
	// statements.
	var stored []string
	err = pgx.BeginFunc(ctx, a.cfg.Store.db, func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		// The pauses as they are at the commit: one that began since the
		// payments were placed holds those it covers, their slots given
		// back; one that ended since, a placement again.
		if err := q.LockPausesShared(ctx); err != nil {
			return fmt.Errorf("payment: pauses: %w", err)
		}
		now, err := a.pausedScopes(ctx, q, initWorkflowID)
		if err != nil {
			return err
		}
		// The items of slots past the queue's mark are the feeder's to
		// write, as they come near (Feeder).
		mark, err := queueMarkShared(ctx, q)
		if err != nil {
			return err
		}
		var release []string
		for i, v := range verdicts {
			pl, ok := places[ks[i]]
			if v.refusal != nil || !ok || pl.status != StatusScheduled {
				continue
			}
			switch tag := pauseTag(now, v.r.TenantID, pl.rail); {
			case tag == "" && pl.pausedBy != "":
				return fmt.Errorf("payment: %s's pause ended while Phase A placed its payments: placing them again", pl.pausedBy)
			case tag != "" && pl.pausedBy == "":
				delete(enqueues, ks[i])
				times[i], results[i].ScheduledExecutionTime = v.r.RequestedExecutionTime, v.r.RequestedExecutionTime.UTC()
				pausedKeys, pausedTags, release = append(pausedKeys, ks[i]), append(pausedTags, tag), append(release, ks[i])
			}
		}
		if err := releaseSlots(ctx, a.cfg.Pacer, tx, release); err != nil {
			return err
		}
		if stored, err = storePhaseA(ctx, tx, st.storeParams(statuses, reasons, times, contexts, rails, dates)); err != nil {
			return fmt.Errorf("payment: store Phase A's verdicts on %d payments: %w", n, err)
		}
		// In key order: sorted keys, not the larger items. (In slot order
		// the queue's COPY took a tenth longer: the key's random inserts
		// cost more than the claim index's.)
		keys := slices.Clone(stored)
		slices.Sort(keys)
		items := make([]queue.EnqueueParams, 0, len(enqueues))
		for _, key := range keys {
			if e, ok := enqueues[key]; ok && beforeMark(mark, e.ScheduledExecTime) {
				items = append(items, e)
			}
		}
		if _, err := a.cfg.Queue.EnqueueBatchTx(ctx, tx, items); err != nil {
			return err
		}
		if len(pausedKeys) > 0 {
			if err := q.SetPausedBy(ctx, dbsqlc.SetPausedByParams{PaymentIds: pausedKeys, Tags: pausedTags}); err != nil {
				return fmt.Errorf("payment: mark %d paused payments: %w", len(pausedKeys), err)
			}
		}
		if err := askReorder(ctx, q, verdicts, ks, enqueues, places); err != nil {
			return err
		}
		return q.DeleteIntake(ctx, initWorkflowID)
	})
	if errors.Is(err, queue.ErrConflict) {
		return nil, true, nonRetryable(ErrTypeConflict, err)
	}
	if err != nil {
		return nil, true, err
	}
	if len(stored) == n {
		return results, true, nil
	}
	// Some payments were stored by another run: answer where that left
	// them, so that a replay answers as the first run did.
	results, err = a.storedOutcomes(ctx, ks, stored, results)
	return results, true, err
}

// storedOutcomes answers, for each key in keys, the result this run
// reached when it moved the payment, or else where the payment is.
func (a *InitActivities) storedOutcomes(ctx context.Context, keys, moved []string, ours []InitResult) ([]InitResult, error) {
	mine := make(map[string]bool, len(moved))
	for _, k := range moved {
		mine[k] = true
	}
	byKey := make(map[string]InitResult, len(ours))
	for _, r := range ours {
		if mine[r.Key] {
			byKey[r.Key] = r
		}
	}
	var rest []string
	for _, k := range keys {
		if _, ok := byKey[k]; !ok {
			rest = append(rest, k)
		}
	}
	rows, err := a.cfg.Store.q.PaymentOutcomes(ctx, rest)
	if err != nil {
		return nil, fmt.Errorf("payment: outcomes of %d payments: %w", len(rest), err)
	}
	for _, row := range rows {
		r := InitResult{PaymentID: row.ExternalID, Key: row.PaymentID, Status: Status(row.Status), Reason: ptr.Deref(row.StatusReason)}
		if row.ScheduledExecutionTime != nil {
			r.ScheduledExecutionTime = row.ScheduledExecutionTime.UTC()
		}
		byKey[row.PaymentID] = r
	}
	out := make([]InitResult, 0, len(keys))
	for _, k := range keys {
		if r, ok := byKey[k]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// pick returns xs at the indexes.
func pick[T any](xs []T, at []int) []T {
	out := make([]T, len(at))
	for i, j := range at {
		out[i] = xs[j]
	}
	return out
}

// execContext is the context an execution is given: none ("") for a
// payment whose Phase A output is stored with it (payments.context), so
// that neither the queue nor the workflow engine holds a copy (the
// execution reads it there: loadContext); the JSON the queue item carried
// for a payment enqueued before.
func execContext(contextJSON string) (Context, error) {
	if contextJSON == "" {
		return Context{Version: 3}, nil
	}
	var pc Context
	err := json.Unmarshal([]byte(contextJSON), &pc)
	return pc, err
}

// contextJSON is the execution's context of an accepted payment.
// Its request is not in it: the payment's row has it beside (Store.Context
// puts them together).
// traceParent is Phase A's trace context (empty: none).
func contextJSON(v verdict, pl placement, traceParent string) ([]byte, error) {
	sp := storedPhaseA{Enrichment: v.enr, Amount: money.String(v.money.Amount), Rules: v.rules,
		PacingConfig: pl.slot.Config, TenantPacingConfig: pl.tenantConfig, TraceParent: traceParent}
	if !pl.date.IsZero() {
		sp.ExecutionDate = pl.date.String()
	}
	return sp.appendJSON(make([]byte, 0, 256)), nil
}

// appendJSON appends sp as json.Marshal encodes it, to the same JSON
// value (TestStoredPhaseAJSON): Phase A encodes one a payment, and
// encoding/json's reflection was a tenth of Phase A's own CPU.
func (sp storedPhaseA) appendJSON(b []byte) []byte {
	e := sp.Enrichment
	b = append(b, `{"enrichment":{"CreditorCountry":`...)
	b = appendMarshalString(b, e.CreditorCountry)
	b = append(b, `,"CreditorIBAN":`...)
	b = appendMarshalString(b, e.CreditorIBAN)
	for _, f := range [...]struct{ name, v string }{{`,"AccountKey":`, e.AccountKey}, {`,"AccountCurrency":`, e.AccountCurrency}} {
		if f.v != "" {
			b = appendMarshalString(append(b, f.name...), f.v)
		}
	}
	if e.LimitBased {
		b = append(b, `,"LimitBased":true`...)
	}
	if e.FXNeeded {
		b = append(b, `,"FXNeeded":true`...)
	}
	b = appendMarshalString(append(b, `},"amount":`...), sp.Amount)
	b = append(b, `,"rulesPassed":`...)
	if sp.Rules == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, r := range sp.Rules {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendMarshalString(b, r)
		}
		b = append(b, ']')
	}
	for _, f := range [...]struct{ name, v string }{{`,"pacingConfig":`, sp.PacingConfig}, {`,"tenantPacingConfig":`, sp.TenantPacingConfig},
		{`,"executionDate":`, sp.ExecutionDate}, {`,"traceparent":`, sp.TraceParent}} {
		if f.v != "" {
			b = appendMarshalString(append(b, f.name...), f.v)
		}
	}
	return append(b, '}')
}

// storedPhaseA is what Phase A stores with a payment for its execution:
// its Context but the request.
type storedPhaseA struct {
	Enrichment         Enrichment `json:"enrichment"`
	Amount             string     `json:"amount"`
	Rules              []string   `json:"rulesPassed"`
	PacingConfig       string     `json:"pacingConfig,omitempty"`
	TenantPacingConfig string     `json:"tenantPacingConfig,omitempty"`
	ExecutionDate      string     `json:"executionDate,omitempty"`
	TraceParent        string     `json:"traceparent,omitempty"`
}

// place decides where each accepted payment goes: on its rail, before
// its cut-off (placeOnRails), or, with no rails, at its slot under its
// tenant's or PAYMENT's config (execTimes).
func (a *InitActivities) place(ctx context.Context, keys []string, rs []Request, vs []verdict, paused map[string]string) (map[string]placement, error) {
	if len(paused) > 0 {
		// The payments of a paused scope take no slot: they wait for its
		// resume.
		var ks []string
		var ps []Request
		var pv []verdict
		held := map[string]placement{}
		for i, r := range rs {
			if r.Rail == "" && a.cfg.Rails != nil && vs[i].money != nil {
				// Staged before rails were chosen at intake: its rail now.
				if rail, err := a.railFor(ctx, r, vs[i].money.Amount); err == nil {
					r.Rail = rail.Name
				}
			}
			if tag := pauseTag(paused, r.TenantID, r.Rail); tag != "" {
				held[keys[i]] = placement{status: StatusScheduled, rail: r.Rail, pausedBy: tag, tenantConfig: r.TenantID}
				continue
			}
			ks, ps, pv = append(ks, keys[i]), append(ps, r), append(pv, vs[i])
		}
		out, err := a.place(ctx, ks, ps, pv, nil)
		if err != nil || len(held) == 0 {
			return out, err
		}
		// The tenants' own configs, which their resumes pace them under
		// too (tenantConfig holds the tenant until then).
		var tenants []string
		for _, pl := range held {
			tenants = append(tenants, pl.tenantConfig)
		}
		cfgs, err := a.pacingConfigs(ctx, tenants)
		if err != nil {
			return nil, err
		}
		for k, pl := range held {
			pl.tenantConfig = cfgs.byTenant[pl.tenantConfig]
			out[k] = pl
		}
		return out, nil
	}
	if a.cfg.Rails != nil {
		return a.placeOnRails(ctx, keys, rs, vs)
	}
	slots, err := a.execTimes(ctx, keys, rs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]placement, len(slots))
	for k, s := range slots {
		out[k] = placement{status: StatusScheduled, slot: s}
	}
	return out, nil
}

// InitIntake is Phase A, in one step, for the payments waiting in an init
// workflow's intake row. With the row gone, an earlier attempt stored them
// and its answer was lost: the result says so, and the payments say where
// they are.
func (a *InitActivities) InitIntake(ctx context.Context, initWorkflowID string) (BatchResult, error) {
	results, found, err := a.initIntake(ctx, initWorkflowID)
	if err == nil && !found {
		return BatchResult{TakenBefore: true}, nil
	}
	return batchResult(results), err
}

// InitPayment is Phase A for one payment given whole, in one step, on
// the code path PaymentPhaseA runs: the payment is taken in first (a
// replay takes nothing), then stored. No workflow calls it: tests take a
// payment in with it, without a workflow.
func (a *InitActivities) InitPayment(ctx context.Context, r Request, initWorkflowID string) (InitResult, error) {
	res, err := a.initRequests(ctx, []Request{r}, initWorkflowID)
	if err != nil || len(res) == 0 {
		return InitResult{PaymentID: r.PaymentID, Key: Key(r.TenantID, r.PaymentID), Status: StatusReceived}, err
	}
	return res[0], nil
}

// initRequests is Phase A for requests given whole, under an init
// workflow's id: an invalid one is stored REJECTED at once, the others taken in,
// then stored; a payment taken in before answers where it is.
func (a *InitActivities) initRequests(ctx context.Context, rs []Request, initWorkflowID string) ([]InitResult, error) {
	var valid []Request
	var results []InitResult
	for _, r := range rs {
		m, err := Validate(r, a.now())
		if err == nil {
			valid = append(valid, r)
			continue
		}
		var money *Money
		if m.Currency != "" {
			money = &m
		}
		if _, err := a.cfg.Store.Record(ctx, r, money, StatusRejected, err.Error(), nil); err != nil && !errors.Is(err, ErrConflict) {
			return nil, err
		}
		results = append(results, InitResult{PaymentID: r.PaymentID, Key: Key(r.TenantID, r.PaymentID), Status: StatusRejected, Reason: err.Error()})
	}
	receipts, err := a.cfg.Store.Receive(ctx, valid, func(int) string { return initWorkflowID }, false)
	if err != nil {
		return nil, err
	}
	var ours []string
	for i, rc := range receipts {
		if !rc.Conflict {
			ours = append(ours, rc.Key)
			continue
		}
		if len(rs) == 1 {
			return nil, nonRetryable(ErrTypeConflict, fmt.Errorf("payment %s: %w", valid[i].PaymentID, ErrConflict))
		}
		a.log().Warn("a payment in a chunk uses an id its tenant used for a different payment; it is not stored",
			"workflow", initWorkflowID, "tenant", valid[i].TenantID, "payment", valid[i].PaymentID)
	}
	stored, _, err := a.initIntake(ctx, initWorkflowID)
	if err != nil {
		return nil, err
	}
	// The payments taken in before (replays) answer where they are.
	var keys []string
	for _, r := range stored {
		keys = append(keys, r.Key)
	}
	more, err := a.storedOutcomes(ctx, ours, keys, stored)
	return append(results, more...), err
}

// BatchResult is how a chunk's Phase A ended.
type BatchResult struct {
	Scheduled int
	Rejected  int
	// Held: set aside by their tenants' cut-off rule (HOLD).
	Held int `json:",omitempty"`
	// AwaitingApproval: stopped by a rule of their tenants until they
	// are approved.
	AwaitingApproval int `json:",omitempty"`
	// TakenBefore: the payments had been taken on by an earlier attempt
	// whose answer was lost (the counts are then zero).
	TakenBefore bool `json:",omitempty"`
}

// InitChunk is InitPayment for a chunk of payments given whole, in one
// step: tests and bench saga call it; no workflow does.
func (a *InitActivities) InitChunk(ctx context.Context, chunk []Request, initWorkflowID string) (BatchResult, error) {
	results, err := a.initRequests(ctx, chunk, initWorkflowID)
	return batchResult(results), err
}

func batchResult(results []InitResult) BatchResult {
	var out BatchResult
	for _, r := range results {
		switch r.Status {
		case StatusRejected:
			out.Rejected++
		case StatusHeld:
			out.Held++
		case StatusAwaitingApproval:
			out.AwaitingApproval++
		case StatusCancelled: // cancelled while it waited for Phase A
		default:
			out.Scheduled++
		}
	}
	return out
}

func (a *InitActivities) now() time.Time {
	if a.cfg.Now != nil {
		return a.cfg.Now()
	}
	return time.Now()
}

// pausedScopes are the pauses that hold the payments of an intake row:
// every tenant's and rail's by their tags, and, under PauseBatch, the
// tag of its file's when its file is paused (a file's chunks' rows are
// named after it).
func (a *InitActivities) pausedScopes(ctx context.Context, q *dbsqlc.Queries, initWorkflowID string) (map[string]string, error) {
	rows, err := q.ListPauses(ctx)
	if err != nil {
		return nil, fmt.Errorf("payment: pauses: %w", err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		scope := PauseScope{Kind: r.Scope, ID: r.ScopeID}
		if r.Scope == PauseBatch {
			if strings.HasPrefix(initWorkflowID, batchIntakePrefix(r.ScopeID)) {
				out[PauseBatch] = scope.tag()
			}
			continue
		}
		out[scope.tag()] = scope.tag()
	}
	return out, nil
}

// askReorder asks for the payments waiting on the rails that payments of
// a higher priority than some of them just joined to be put in order
// again (RunLevers does it, once for a file's chunks): HIGH ones, and
// NORMAL ones where LOW ones wait. Slots were given in arrival order.
func askReorder(ctx context.Context, q *dbsqlc.Queries, vs []verdict, keys []string, enqueued map[string]queue.EnqueueParams, places map[string]placement) error {
	var high, normal []string
	for i, v := range vs {
		if _, ok := enqueued[keys[i]]; !ok {
			continue
		}
		rail := places[keys[i]].rail
		switch v.r.Priority.orDefault() {
		case PriorityHigh:
			if rail != "" && !slices.Contains(high, rail) {
				high = append(high, rail)
			}
		case PriorityNormal:
			if rail != "" && !slices.Contains(normal, rail) {
				normal = append(normal, rail)
			}
		}
	}
	if len(normal) > 0 {
		low, err := q.LowWaitingOnRails(ctx, normal)
		if err != nil {
			return fmt.Errorf("payment: LOW payments waiting: %w", err)
		}
		if low {
			high = append(high, normal...)
		}
	}
	if len(high) == 0 {
		return nil
	}
	slices.Sort(high)
	if err := q.AskReorder(ctx, slices.Compact(high)); err != nil {
		return fmt.Errorf("payment: ask for %v to be put in order: %w", high, err)
	}
	return nil
}
