package payment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/ptr"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/fx"
	"github.com/paydispatch/paydispatch/ledger/limit"
	"github.com/paydispatch/paydispatch/money"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/process"
	"github.com/paydispatch/paydispatch/rail"
)

// SubmitPaymentType is the process that executes a payment.
const SubmitPaymentType = "SubmitPayment"

// The steps of SubmitPayment, and the compensations that undo them.
const (
	StepCreateTransaction  = "CreateTransaction"
	StepBookLimits         = "BookLimits"
	StepBookFx             = "BookFx"
	StepCreatePayment      = "CreatePayment"
	StepReverseTransaction = "ReverseTransaction"
	StepReverseLimits      = "ReverseLimits"
	StepUnwindFx           = "UnwindFx"
)

// SubmitConfig says how executed payments leave for their rail.
type SubmitConfig struct {
	// RailType is the outbox rail type of the instructions (default
	// rail.RailSEPAJSON).
	RailType string
}

// SubmitPayment is the process that executes a payment, each step in the
// transaction that records it (package process):
//
//	CreateTransaction  debit the account: the amount (converted at a
//	                   quote taken now when the payment's currency is not
//	                   the account's) plus the account's fee
//	BookLimits         book the debit against the account's period
//	                   limits, all or nothing (limit-based accounts)
//	BookFx             book the quote as an FX contract (a conversion)
//	CreatePayment      record the booking, make the payment ACCEPTED and
//	                   enqueue its rail instruction, in one transaction
//
// A business failure (INSUFFICIENT_FUNDS, LIMIT_EXCEEDED, FX_UNAVAILABLE,
// ...) compensates the steps done, last first (ReverseTransaction,
// ReverseLimits, UnwindFx), and the payment ends FAILED with the code.
// Every effect is keyed by the step's idempotency key, so a step delivered
// twice has one effect.
func SubmitPayment(cfg SubmitConfig) process.Definition {
	if cfg.RailType == "" {
		cfg.RailType = rail.RailSEPAJSON
	}
	s := submit{cfg: cfg}
	return process.Definition{
		Type:    SubmitPaymentType,
		Initial: StepCreateTransaction,
		Next:    s.next,
		Steps: map[string]process.Step{
			StepCreateTransaction:  {Handler: s.createTransaction, Compensation: StepReverseTransaction},
			StepBookLimits:         {Handler: s.bookLimits, Compensation: StepReverseLimits},
			StepBookFx:             {Handler: s.bookFx, Compensation: StepUnwindFx},
			StepCreatePayment:      {Handler: s.createPayment},
			StepReverseTransaction: {Handler: s.reverseTransaction},
			StepReverseLimits:      {Handler: s.reverseLimits},
			StepUnwindFx:           {Handler: s.unwindFx},
		},
		OnFailed:     s.failed,
		GenericPlans: true, // TestExecutionPlans
	}
}

type submit struct{ cfg SubmitConfig }

// The process data's keys: what the exec workflow starts it with
// (submitData), then what each step adds.
const (
	keyPaymentID      = "paymentId"
	keyTenantID       = "tenantId"
	keyAccountID      = "accountId"
	keyAmount         = "amount"
	keyCurrency       = "currency"
	keyExecutionTime  = "executionTime"
	keyCreditorName   = "creditorName"
	keyCreditorIBAN   = "creditorIban"
	keyCreditorBIC    = "creditorBic"
	keyRemittance     = "remittanceInfo"
	keyAccountCcy     = "accountCurrency"
	keyLimitBased     = "limitBased"
	keyFXNeeded       = "fxNeeded"
	keyQuote          = "quote"
	keyDebitAmount    = "debitAmount"
	keyFeeAmount      = "feeAmount"
	keyDebitTxn       = "debitTransactionId"
	keyFxContract     = "fxContractId"
	keyOutboxID       = "outboxId"
	keySequence       = "railSequence"
	keyValueDate      = "valueDate"
	keyBookedPeriods  = "limitPeriods"
	keyReversedTxn    = "reversalTransactionId"
	keyUnwoundFx      = "unwound"
	keyLimitsReversed = "limitsReversed"
	// The tenant's ids of the payment and of its account (keyPaymentID and
	// keyAccountID are their keys): the end-to-end id and the debtor
	// account the rail is told.
	keyExternalID    = "externalId"
	keyDebtorAccount = "debtorAccount"
	// keyBegun: the first step began the execution (SCHEDULED →
	// ACCEPTED); a process started before that was accepted at booking.
	keyBegun = "executionBegun"
)

// CodeCancelled is the code of an execution that found its payment
// cancelled: it began nothing, and the payment stays CANCELLED.
const CodeCancelled = "CANCELLED"

// SubmitData is SubmitPayment's initial data for a payment, from its
// Phase A context: deterministic, so the exec workflow may build it.
func SubmitData(paymentID string, pc Context, executionTime time.Time) process.Data {
	r := pc.Request
	acct := pc.Enrichment.AccountKey
	if acct == "" {
		acct = r.DebtorAccount
	}
	return process.Data{
		keyPaymentID: paymentID, keyExternalID: r.PaymentID, keyTenantID: r.TenantID, keyAccountID: acct, keyDebtorAccount: r.DebtorAccount,
		keyAmount: pc.Amount, keyCurrency: r.Currency, keyExecutionTime: executionTime.UTC().Format(time.RFC3339Nano),
		keyCreditorName: r.Creditor.Name, keyCreditorIBAN: pc.Enrichment.CreditorIBAN, keyCreditorBIC: strings.ToUpper(r.Creditor.BIC),
		keyRemittance: r.RemittanceInfo,
	}
}

func (s submit) next(step string, d process.Data) (string, error) {
	switch step {
	case StepCreateTransaction:
		if d.Bool(keyLimitBased) {
			return StepBookLimits, nil
		}
		fallthrough
	case StepBookLimits:
		if d.Bool(keyFXNeeded) {
			return StepBookFx, nil
		}
		return StepCreatePayment, nil
	case StepBookFx:
		return StepCreatePayment, nil
	case StepCreatePayment:
		return "", nil
	}
	return "", fmt.Errorf("payment: no step after %q", step)
}

// fail turns a ledger refusal into the process's business failure (by its
// code; never by its text); anything else stays an infrastructure error.
func fail(err error) error {
	if code := ledger.CodeOf(err); code != "" {
		// The code is the failure's own field: keep it out of the message.
		return process.Failf(string(code), "%s", strings.TrimPrefix(err.Error(), string(code)+": "))
	}
	return err
}

func decimalOf(d process.Data, key string) (decimal.Decimal, error) {
	v, err := decimal.NewFromString(d.String(key))
	if err != nil {
		return decimal.Decimal{}, fmt.Errorf("payment: process data %s: %w", key, err)
	}
	return v, nil
}

func (s submit) executionTime(d process.Data) time.Time {
	t, err := time.Parse(time.RFC3339Nano, d.String(keyExecutionTime))
	if err != nil {
		return time.Now().UTC()
	}
	return t
}

// valueDate is the day of the execution, UTC.
func (s submit) valueDate(d process.Data) time.Time {
	t := s.executionTime(d).UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

func (s submit) createTransaction(ctx context.Context, tx pgx.Tx, in process.StepInput) (process.Data, error) {
	d := in.Data
	amount, err := decimalOf(d, keyAmount)
	if err != nil {
		return nil, err
	}
	// The execution begins here, in the debit's transaction and before
	// the account's row is locked: a cancel that won leaves nothing to
	// debit; one that comes after finds the payment ACCEPTED.
	switch err := NewStore(tx).Begin(ctx, d.String(keyPaymentID), s.executionTime(d)); {
	case errors.Is(err, ErrCancelled):
		return nil, process.Failf(CodeCancelled, "%s", err.Error())
	case errors.Is(err, ErrWrongStatus):
		return nil, process.Failf(ErrTypeWrongStatus, "%s", err.Error())
	case err != nil:
		return nil, err
	}
	acct, err := account.Get(ctx, tx, d.String(keyAccountID))
	if err != nil {
		return nil, fail(err)
	}
	if acct.TenantID != d.String(keyTenantID) {
		return nil, process.Failf(string(ledger.CodeAccountNotFound), "no account %s for tenant %s", acct.AccountID, d.String(keyTenantID))
	}
	out := process.Data{keyAccountCcy: acct.Currency, keyLimitBased: acct.LimitBased, keyFXNeeded: acct.Currency != d.String(keyCurrency), keyBegun: true}
	debit := amount
	if acct.Currency != d.String(keyCurrency) {
		// The quote is firm for this payment: the debit and the contract
		// (BookFx) use its rate and amounts whatever rates do meanwhile.
		q, err := fx.GetQuote(ctx, tx, acct.Currency, d.String(keyCurrency), amount)
		if err != nil {
			return nil, fail(err)
		}
		raw, err := json.Marshal(q)
		if err != nil {
			return nil, err
		}
		var quote map[string]any
		if err := json.Unmarshal(raw, &quote); err != nil {
			return nil, err
		}
		out[keyQuote], debit = quote, q.DebitAmount
	}
	posted, err := account.Debit(ctx, tx, account.Entry{
		AccountID: acct.AccountID, Amount: debit, Currency: acct.Currency, ChargeFee: true,
		Reference: in.IdempotencyKey, Description: "payment " + d.String(keyPaymentID), ValueDate: s.valueDate(d),
	})
	if err != nil {
		return nil, fail(err)
	}
	out[keyDebitTxn] = posted.TransactionID.String()
	out[keyDebitAmount] = debit.String()
	out[keyFeeAmount] = posted.Fee.String()
	return out, nil
}

func (s submit) bookLimits(ctx context.Context, tx pgx.Tx, in process.StepInput) (process.Data, error) {
	d := in.Data
	debit, err := decimalOf(d, keyDebitAmount)
	if err != nil {
		return nil, err
	}
	booked, err := limit.Book(ctx, tx, limit.BookRequest{
		AccountID: d.String(keyAccountID), Amount: debit, Currency: d.String(keyAccountCcy),
		At: s.executionTime(d), Reference: in.IdempotencyKey,
	})
	if err != nil {
		return nil, fail(err)
	}
	return process.Data{keyBookedPeriods: len(booked.Bookings)}, nil
}

func (s submit) quote(d process.Data) (fx.Quote, error) {
	raw, err := json.Marshal(d[keyQuote])
	if err != nil {
		return fx.Quote{}, err
	}
	var q fx.Quote
	if err := json.Unmarshal(raw, &q); err != nil {
		return fx.Quote{}, fmt.Errorf("payment: process data %s: %w", keyQuote, err)
	}
	return q, nil
}

func (s submit) bookFx(ctx context.Context, tx pgx.Tx, in process.StepInput) (process.Data, error) {
	q, err := s.quote(in.Data)
	if err != nil {
		return nil, err
	}
	c, _, err := fx.Book(ctx, tx, fx.BookRequest{
		AccountID: in.Data.String(keyAccountID), Quote: q, ValueDate: s.valueDate(in.Data), Reference: in.IdempotencyKey,
	})
	if err != nil {
		return nil, fail(err)
	}
	return process.Data{keyFxContract: c.ContractID.String()}, nil
}

// createPayment records the booking, makes the payment ACCEPTED and
// enqueues its rail instruction: one transaction, so a booked payment
// always has its instruction and an unbooked one never does.
func (s submit) createPayment(ctx context.Context, tx pgx.Tx, in process.StepInput) (process.Data, error) {
	d := in.Data
	paymentID := d.String(keyPaymentID)
	amount, err := decimalOf(d, keyAmount)
	if err != nil {
		return nil, err
	}
	debit, err := decimalOf(d, keyDebitAmount)
	if err != nil {
		return nil, err
	}
	fee, err := decimalOf(d, keyFeeAmount)
	if err != nil {
		return nil, err
	}
	debitTxn, err := uuid.Parse(d.String(keyDebitTxn))
	if err != nil {
		return nil, fmt.Errorf("payment: process data %s: %w", keyDebitTxn, err)
	}
	var fxContract *uuid.UUID
	if id := d.String(keyFxContract); id != "" {
		c, err := uuid.Parse(id)
		if err != nil {
			return nil, fmt.Errorf("payment: process data %s: %w", keyFxContract, err)
		}
		fxContract = &c
	}
	instr, err := s.instruction(d, amount)
	if err != nil {
		return nil, err
	}
	payload, err := json.Marshal(instr)
	if err != nil {
		return nil, err
	}
	outboxID, seq, _, err := outbox.Enqueue(ctx, tx, outbox.Instruction{
		InstructionID: paymentID, ParticipantID: d.String(keyTenantID), IdempotencyKey: paymentID,
		RailType: s.cfg.RailType, Payload: payload,
		// The relayer's send span is the child of the execution's.
		TraceParent: traceParent(ctx),
	})
	if err != nil {
		return nil, fmt.Errorf("payment %s: enqueue its rail instruction: %w", paymentID, err)
	}
	q := dbsqlc.New(tx)
	if _, err := q.InsertBooking(ctx, dbsqlc.InsertBookingParams{
		PaymentID: paymentID, ProcessID: in.ProcessID, DebitAccountID: d.String(keyAccountID), DebitTransactionID: debitTxn,
		FxContractID: fxContract, DebitCurrency: d.String(keyAccountCcy), DebitAmount: debit,
		CreditCurrency: d.String(keyCurrency), CreditAmount: amount, FeeCurrency: d.String(keyAccountCcy), FeeAmount: fee,
		ValueDate: s.valueDate(d), BeneficiaryName: d.String(keyCreditorName),
		BeneficiaryIban: ptr.Optional(d.String(keyCreditorIBAN)), BeneficiaryBic: ptr.Optional(d.String(keyCreditorBIC)), OutboxID: &outboxID,
	}); err != nil {
		return nil, fmt.Errorf("payment %s: booking: %w", paymentID, err)
	}
	if !d.Bool(keyBegun) { // a process started before its first step began the execution
		err = NewStore(tx).Accept(ctx, paymentID, s.executionTime(d))
		if err != nil && !errors.Is(err, ErrWrongStatus) {
			return nil, err
		}
		if err != nil {
			// A payment FAILED, DELIVERED, ... cannot be accepted again.
			return nil, process.Failf(ErrTypeWrongStatus, "%s", err.Error())
		}
	}
	return process.Data{keyOutboxID: outboxID.String(), keySequence: seq, keyValueDate: s.valueDate(d).Format(time.DateOnly)}, nil
}

// instruction is the payment as its rail receives it (package rail's
// payload).
func (s submit) instruction(d process.Data, amount decimal.Decimal) (rail.Instruction, error) {
	digits, ok := money.MinorUnits(d.String(keyCurrency))
	if !ok {
		return rail.Instruction{}, fmt.Errorf("payment: currency %q has no minor units", d.String(keyCurrency))
	}
	paymentID := d.String(keyPaymentID)
	return rail.Instruction{
		PaymentID: paymentID, EndToEndID: EndToEndID(externalID(d)),
		Amount: amount.StringFixed(int32(digits)), Currency: d.String(keyCurrency),
		ValueDate:      s.valueDate(d).Format(time.DateOnly),
		Debtor:         rail.Debtor{Name: d.String(keyTenantID), Account: debtorAccount(d)},
		Creditor:       rail.Creditor{Name: d.String(keyCreditorName), IBAN: d.String(keyCreditorIBAN), BIC: d.String(keyCreditorBIC)},
		RemittanceInfo: d.String(keyRemittance), TenantID: d.String(keyTenantID),
	}, nil
}

// externalID is the payment's id as its tenant chose it.
func externalID(d process.Data) string {
	if id := d.String(keyExternalID); id != "" {
		return id
	}
	return d.String(keyPaymentID)
}

// debtorAccount is the debtor's account as its tenant names it.
func debtorAccount(d process.Data) string {
	if a := d.String(keyDebtorAccount); a != "" {
		return a
	}
	return d.String(keyAccountID)
}

// EndToEndID is the payment's end-to-end id on the rail: ISO 20022 allows
// 35 characters, a payment id may have 64, so it is derived (stable, and
// unique in practice: 128 bits of a hash).
func EndToEndID(paymentID string) string {
	if len(paymentID) <= 35 {
		return paymentID
	}
	sum := sha256.Sum256([]byte(paymentID))
	return "E2E" + hex.EncodeToString(sum[:16])
}

// The compensations: each undoes its forward step's effect once, found by
// that step's idempotency key (the reference it wrote), and does nothing
// when the step left none.

func forwardKey(in process.StepInput, step string) string { return in.ProcessID.String() + ":" + step }

func (s submit) reverseTransaction(ctx context.Context, tx pgx.Tx, in process.StepInput) (process.Data, error) {
	p, reversed, err := account.ReverseIfPosted(ctx, tx, forwardKey(in, StepCreateTransaction), account.Reversal{
		Reference: in.IdempotencyKey, Description: "payment " + in.Data.String(keyPaymentID) + " failed",
	})
	if err != nil {
		return nil, fail(err)
	}
	if !reversed {
		return process.Data{}, nil
	}
	return process.Data{keyReversedTxn: p.TransactionID.String()}, nil
}

func (s submit) reverseLimits(ctx context.Context, tx pgx.Tx, in process.StepInput) (process.Data, error) {
	if _, err := limit.Reverse(ctx, tx, forwardKey(in, StepBookLimits)); err != nil {
		return nil, fail(err)
	}
	return process.Data{keyLimitsReversed: true}, nil
}

func (s submit) unwindFx(ctx context.Context, tx pgx.Tx, in process.StepInput) (process.Data, error) {
	_, unwound, err := fx.UnwindIfBooked(ctx, tx, forwardKey(in, StepBookFx), "payment "+in.Data.String(keyPaymentID)+" failed")
	if err != nil {
		return nil, fail(err)
	}
	return process.Data{keyUnwoundFx: unwound}, nil
}

// failed makes the payment FAILED with the failure's code, in the
// transaction that ends the process: whoever drove it (the exec workflow,
// or an operator's retry long after).
func (s submit) failed(ctx context.Context, tx pgx.Tx, inst process.Instance, final process.Status, code string) error {
	reason := inst.ErrorCode
	if inst.ErrorMessage != "" {
		reason += ": " + inst.ErrorMessage
	}
	if final == process.StatusCompensationFailed {
		reason = "COMPENSATION_FAILED (" + code + ") after " + reason
	}
	_, err := dbsqlc.New(tx).FailPayment(ctx, dbsqlc.FailPaymentParams{PaymentID: inst.BusinessKey, StatusReason: &reason})
	if err != nil {
		return fmt.Errorf("payment %s: record the failure: %w", inst.BusinessKey, err)
	}
	return nil
}
