package payment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"go.temporal.io/sdk/temporal"

	"github.com/paydispatch/paydispatch/bankid"
	"github.com/paydispatch/paydispatch/ledger/account"
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
	// the account itself then.
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
func (e *Enrichment) debtorAccount(r Request, accounts map[string]account.Summary) error {
	acct, ok := accounts[r.DebtorAccount]
	if !ok || acct.TenantID != r.TenantID {
		return fmt.Errorf("debtorAccount: no account %q for tenant %s", r.DebtorAccount, r.TenantID)
	}
	e.AccountCurrency, e.LimitBased, e.FXNeeded = acct.Currency, acct.LimitBased, acct.Currency != r.Currency
	return nil
}

// lookupAccounts finds the payments' debtor accounts in one query.
func (a *InitActivities) lookupAccounts(ctx context.Context, rs []Request) (map[string]account.Summary, error) {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.DebtorAccount
	}
	accounts, err := account.Lookup(ctx, a.Store.db, ids)
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
// accounts are the debtor accounts found (lookupAccounts); nil skips the
// account checks (init workflows started before accounts existed).
func (a *InitActivities) judge(rs []Request, now time.Time, accounts map[string]account.Summary) []verdict {
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
		if err == nil && accounts != nil {
			err = v.enr.debtorAccount(r, accounts)
		}
		if err == nil {
			v.rules, err = a.Rules.apply(r, m, v.enr)
		}
		v.refusal = err
		out[i] = v
	}
	return out
}

// InitResult is how Phase A ended for one payment.
type InitResult struct {
	PaymentID              string
	Status                 Status
	Reason                 string
	ScheduledExecutionTime time.Time
}

// InitActivities hold Phase A's I/O; each is idempotent.
type InitActivities struct {
	Store *Store
	Queue *queue.Queue
	Rules Rules
	// Pacer assigns slots when PAYMENT names a pacing config; nil: never.
	Pacer Pacer
	Now   func() time.Time
	Log   *slog.Logger
}

// initPayments is Phase A for any number of payments: judge each, give the
// accepted ones their execution times (one call to the limiter per pacing
// config), then, in one transaction, record the refused ones REJECTED and
// the others SCHEDULED with their context saved and their queue item
// READY. A retry redoes everything; replays of stored payments are no-ops,
// and another payment under a stored id is a CONFLICT that stores nothing.
func (a *InitActivities) initPayments(ctx context.Context, rs []Request, initWorkflowID string) ([]InitResult, error) {
	accounts, err := a.lookupAccounts(ctx, rs)
	if err != nil {
		return nil, err
	}
	verdicts := a.judge(rs, a.now(), accounts)
	var accepted []Request
	for _, v := range verdicts {
		if v.refusal == nil {
			accepted = append(accepted, v.r)
		}
	}
	slots, err := a.execTimes(ctx, accepted)
	if err != nil {
		return nil, err
	}
	results := make([]InitResult, len(verdicts))
	recordings := make([]Recording, len(verdicts))
	var enqueues []queue.EnqueueParams
	for i, v := range verdicts {
		results[i] = InitResult{PaymentID: v.r.PaymentID}
		if v.refusal != nil {
			results[i].Status, results[i].Reason = StatusRejected, v.refusal.Error()
			recordings[i] = Recording{Request: v.r, Money: v.money, Status: StatusRejected, Reason: results[i].Reason}
			continue
		}
		slot := slots[v.r.PaymentID]
		recordings[i] = Recording{Request: v.r, Money: v.money, Status: StatusScheduled, Scheduled: &slot.At}
		pc, err := contextJSON(v)
		if err != nil {
			return nil, err
		}
		enqueues = append(enqueues, queue.EnqueueParams{
			ItemType: ItemType, ItemID: v.r.PaymentID, TenantID: v.r.TenantID, ScheduledExecTime: slot.At,
			InitWorkflowID: initWorkflowID, Context: pc, Paced: slot.Paced,
		})
		results[i].Status, results[i].ScheduledExecutionTime = StatusScheduled, slot.At
	}
	// The chunk's payments, queue items and audit rows in a few set-based
	// statements; a payment or item that exists already is compared as a
	// single one is (a replay, or a conflict).
	err = pgx.BeginFunc(ctx, a.Store.db, func(tx pgx.Tx) error {
		if err := NewStore(tx).RecordMany(ctx, recordings); err != nil {
			return err
		}
		_, err := a.Queue.EnqueueBatchTx(ctx, tx, enqueues)
		return err
	})
	if errors.Is(err, ErrConflict) || errors.Is(err, queue.ErrConflict) {
		return nil, nonRetryable(ErrTypeConflict, err)
	}
	if err != nil {
		return nil, err
	}
	return results, nil
}

// contextJSON is the execution's context of an accepted payment.
func contextJSON(v verdict) ([]byte, error) {
	return json.Marshal(Context{Version: 2, Request: v.r, Enrichment: v.enr, Amount: v.money.Amount.String(), Rules: v.rules})
}

// InitPayment is Phase A for one payment, in one step.
func (a *InitActivities) InitPayment(ctx context.Context, r Request, initWorkflowID string) (InitResult, error) {
	res, err := a.initPayments(ctx, []Request{r}, initWorkflowID)
	if err != nil {
		return InitResult{PaymentID: r.PaymentID}, err
	}
	return res[0], nil
}

// BatchResult is how a chunk's Phase A ended.
type BatchResult struct {
	Scheduled int
	Rejected  int
}

// InitChunk is Phase A for a chunk of a bulk file, in one step.
func (a *InitActivities) InitChunk(ctx context.Context, chunk []Request, initWorkflowID string) (BatchResult, error) {
	results, err := a.initPayments(ctx, chunk, initWorkflowID)
	var out BatchResult
	for _, r := range results {
		if r.Status == StatusRejected {
			out.Rejected++
		} else {
			out.Scheduled++
		}
	}
	return out, err
}

func (a *InitActivities) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}
