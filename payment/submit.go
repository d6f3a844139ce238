package payment

import (
	"cmp"
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
	"github.com/paydispatch/paydispatch/internal/txdetail"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/fx"
	"github.com/paydispatch/paydispatch/ledger/limit"
	"github.com/paydispatch/paydispatch/money"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/process"
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
	// RailType is the outbox rail type of the instructions of payments
	// stored before rails were configuration (default DefaultRailType); a
	// payment on a rail leaves under its rail's name.
	RailType string
}

// DefaultRailType is the outbox rail type of a payment that names no
// rail: the JSON rail at the process's rail endpoint.
const DefaultRailType = "SEPA_JSON"

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
// CreateTransaction and CreatePayment also run for a group of payments
// at once (process.AdvanceGroup, from GroupExecutor), set-based; a
// payment the group cannot do runs the step alone.
//
// A business failure (INSUFFICIENT_FUNDS, LIMIT_EXCEEDED, FX_UNAVAILABLE,
// ...) compensates the steps done, last first (ReverseTransaction,
// ReverseLimits, UnwindFx), and the payment ends FAILED with the code.
// Every effect is keyed by the step's idempotency key, so a step delivered
// twice has one effect.
func SubmitPayment(cfg SubmitConfig) process.Definition[SubmitState] {
	if cfg.RailType == "" {
		cfg.RailType = DefaultRailType
	}
	s := submit{cfg: cfg}
	return process.Definition[SubmitState]{
		Type:    SubmitPaymentType,
		Initial: StepCreateTransaction,
		Next:    s.next,
		Steps: map[string]process.Step[SubmitState]{
			StepCreateTransaction:  {Handler: s.createTransaction, Group: s.createTransactionGroup, Compensation: StepReverseTransaction},
			StepBookLimits:         {Handler: s.bookLimits, Compensation: StepReverseLimits},
			StepBookFx:             {Handler: s.bookFx, Compensation: StepUnwindFx},
			StepCreatePayment:      {Handler: s.createPayment, Group: s.createPaymentGroup},
			StepReverseTransaction: {Handler: s.reverseTransaction},
			StepReverseLimits:      {Handler: s.reverseLimits},
			StepUnwindFx:           {Handler: s.unwindFx},
		},
		OnFailed:     s.failed,
		GenericPlans: true, // TestExecutionPlans
	}
}

type submit struct{ cfg SubmitConfig }

// SubmitState is SubmitPayment's data: what the exec workflow starts it
// with (SubmitData), then what each step adds (left out while zero). Its
// JSON names are the keys of the untyped map it replaced, so a process
// that map's code left open goes on (TestSubmitPaymentUpgrade).
type SubmitState struct {
	// PaymentID is the payment's key; ExternalID and DebtorAccount are
	// the tenant's ids of the payment and of its account, which the rail
	// is told (empty in a process started before they were kept: then
	// PaymentID and AccountID).
	PaymentID      string    `json:"paymentId"`
	ExternalID     string    `json:"externalId"`
	TenantID       string    `json:"tenantId"`
	AccountID      string    `json:"accountId"`
	DebtorAccount  string    `json:"debtorAccount"`
	Amount         string    `json:"amount"` // the request's, a decimal
	Currency       string    `json:"currency"`
	ExecutionTime  time.Time `json:"executionTime"`
	CreditorName   string    `json:"creditorName"`
	CreditorIBAN   string    `json:"creditorIban"`
	CreditorBIC    string    `json:"creditorBic"`
	RemittanceInfo string    `json:"remittanceInfo"`
	// Rail and ExecutionDate (YYYY-MM-DD): the rail it leaves by and
	// the business day it executes on, the value date (empty in a
	// process started before rails: the default rail type, the execution
	// time's UTC date).
	Rail          string `json:"rail,omitempty"`
	ExecutionDate string `json:"executionDate,omitempty"`
	// The request's details, for the rail (none in a process started
	// before details were kept).
	txdetail.Details

	// CreateTransaction's. Begun: it began the execution (SCHEDULED →
	// ACCEPTED); a process started before that was accepted at booking.
	AccountCurrency string          `json:"accountCurrency,omitempty"`
	LimitBased      bool            `json:"limitBased,omitempty"`
	FXNeeded        bool            `json:"fxNeeded,omitempty"`
	Begun           bool            `json:"executionBegun,omitempty"`
	Quote           *fx.Quote       `json:"quote,omitempty"`
	DebitAmount     decimal.Decimal `json:"debitAmount,omitzero"`
	FeeAmount       decimal.Decimal `json:"feeAmount,omitzero"`
	DebitTxn        uuid.UUID       `json:"debitTransactionId,omitzero"`
	// BookLimits's, BookFx's and CreatePayment's.
	LimitPeriods int       `json:"limitPeriods,omitempty"`
	FxContract   uuid.UUID `json:"fxContractId,omitzero"`
	OutboxID     uuid.UUID `json:"outboxId,omitzero"`
	RailSequence int64     `json:"railSequence,omitempty"`
	ValueDate    string    `json:"valueDate,omitempty"`
	// The compensations'.
	ReversalTxn    uuid.UUID `json:"reversalTransactionId,omitzero"`
	LimitsReversed bool      `json:"limitsReversed,omitempty"`
	Unwound        bool      `json:"unwound,omitempty"`
}

// CodeCancelled is the code of an execution that found its payment
// cancelled: it began nothing, and the payment stays CANCELLED.
const CodeCancelled = "CANCELLED"

// SubmitData is SubmitPayment's initial data for a payment, from its
// Phase A context: deterministic, so the exec workflow may build it.
func SubmitData(paymentID string, pc Context, executionTime time.Time) SubmitState {
	r := pc.Request
	acct := pc.Enrichment.AccountKey
	if acct == "" {
		acct = r.DebtorAccount
	}
	return SubmitState{
		PaymentID: paymentID, ExternalID: r.PaymentID, TenantID: r.TenantID, AccountID: acct, DebtorAccount: r.DebtorAccount,
		Amount: pc.Amount, Currency: r.Currency, ExecutionTime: executionTime.UTC(),
		CreditorName: r.Creditor.Name, CreditorIBAN: pc.Enrichment.CreditorIBAN, CreditorBIC: strings.ToUpper(r.Creditor.BIC),
		RemittanceInfo: r.RemittanceInfo, Rail: pc.Rail, ExecutionDate: pc.ExecutionDate, Details: r.Details,
	}
}

func (s submit) next(step string, st SubmitState) (string, error) {
	switch step {
	case StepCreateTransaction:
		if st.LimitBased {
			return StepBookLimits, nil
		}
		fallthrough
	case StepBookLimits:
		if st.FXNeeded {
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

func (st *SubmitState) amount() (decimal.Decimal, error) {
	v, err := decimal.NewFromString(st.Amount)
	if err != nil {
		return decimal.Decimal{}, fmt.Errorf("payment %s: process data amount: %w", st.PaymentID, err)
	}
	return v, nil
}

func (st *SubmitState) executionTime() time.Time {
	if st.ExecutionTime.IsZero() {
		return time.Now().UTC()
	}
	return st.ExecutionTime
}

// valueDate is the payment's execution date on its rail, or, for one
// stored before rails, the day of the execution, UTC.
func (st *SubmitState) valueDate() time.Time {
	if d, err := time.Parse(time.DateOnly, st.ExecutionDate); err == nil {
		return d
	}
	t := st.executionTime().UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

func (s submit) createTransaction(ctx context.Context, tx pgx.Tx, in process.StepInput, st *SubmitState) error {
	amount, err := st.amount()
	if err != nil {
		return err
	}
	// The execution begins here, in the debit's transaction and before
	// the account's row is locked: a cancel that won leaves nothing to
	// debit; one that comes after finds the payment ACCEPTED.
	switch err := NewStore(tx).Begin(ctx, st.PaymentID, st.executionTime()); {
	case errors.Is(err, ErrCancelled):
		return process.Failf(CodeCancelled, "%s", err.Error())
	case errors.Is(err, ErrWrongStatus):
		return process.Failf(ErrTypeWrongStatus, "%s", err.Error())
	case err != nil:
		return err
	}
	acct, err := account.Get(ctx, tx, st.AccountID)
	if err != nil {
		return fail(err)
	}
	if acct.TenantID != st.TenantID {
		return process.Failf(string(ledger.CodeAccountNotFound), "no account %s for tenant %s", acct.AccountID, st.TenantID)
	}
	st.AccountCurrency, st.LimitBased, st.FXNeeded, st.Begun = acct.Currency, acct.LimitBased, acct.Currency != st.Currency, true
	debit := amount
	if st.FXNeeded {
		// The quote is firm for this payment: the debit and the contract
		// (BookFx) use its rate and amounts whatever rates do meanwhile.
		q, err := fx.GetQuote(ctx, tx, acct.Currency, st.Currency, amount)
		if err != nil {
			return fail(err)
		}
		st.Quote, debit = &q, q.DebitAmount
	}
	posted, err := account.Debit(ctx, tx, account.Entry{
		AccountID: acct.AccountID, Amount: debit, Currency: acct.Currency, ChargeFee: true,
		Reference: in.IdempotencyKey, Description: "payment " + st.PaymentID, ValueDate: st.valueDate(),
	})
	if err != nil {
		return fail(err)
	}
	st.DebitTxn, st.DebitAmount, st.FeeAmount = posted.TransactionID, debit, posted.Fee
	return nil
}

func (s submit) bookLimits(ctx context.Context, tx pgx.Tx, in process.StepInput, st *SubmitState) error {
	booked, err := limit.Book(ctx, tx, limit.BookRequest{
		AccountID: st.AccountID, Amount: st.DebitAmount, Currency: st.AccountCurrency,
		At: st.executionTime(), Reference: in.IdempotencyKey,
	})
	if err != nil {
		return fail(err)
	}
	st.LimitPeriods = len(booked.Bookings)
	return nil
}

func (s submit) bookFx(ctx context.Context, tx pgx.Tx, in process.StepInput, st *SubmitState) error {
	if st.Quote == nil {
		return fmt.Errorf("payment %s: BookFx without a quote in the process data", st.PaymentID)
	}
	c, _, err := fx.Book(ctx, tx, fx.BookRequest{
		AccountID: st.AccountID, Quote: *st.Quote, ValueDate: st.valueDate(), Reference: in.IdempotencyKey,
	})
	if err != nil {
		return fail(err)
	}
	st.FxContract = c.ContractID
	return nil
}

// createPayment records the booking, makes the payment ACCEPTED and
// enqueues its rail instruction: one transaction, so a booked payment
// always has its instruction and an unbooked one never does.
func (s submit) createPayment(ctx context.Context, tx pgx.Tx, in process.StepInput, st *SubmitState) error {
	amount, err := st.amount()
	if err != nil {
		return err
	}
	if st.DebitTxn == uuid.Nil {
		return fmt.Errorf("payment %s: CreatePayment, and no debit in the process data", st.PaymentID)
	}
	var fxContract *uuid.UUID
	if st.FxContract != uuid.Nil {
		fxContract = &st.FxContract
	}
	instr, err := s.instruction(st, amount)
	if err != nil {
		return err
	}
	payload, err := json.Marshal(instr)
	if err != nil {
		return err
	}
	outboxID, seq, _, err := outbox.Enqueue(ctx, tx, outbox.Instruction{
		InstructionID: st.PaymentID, ParticipantID: st.TenantID, IdempotencyKey: st.PaymentID,
		RailType: cmp.Or(st.Rail, s.cfg.RailType), Payload: payload,
		// The relayer's send span is the child of the execution's.
		TraceParent: traceParent(ctx),
	})
	if err != nil {
		return fmt.Errorf("payment %s: enqueue its rail instruction: %w", st.PaymentID, err)
	}
	q := dbsqlc.New(tx)
	if _, err := q.InsertBooking(ctx, dbsqlc.InsertBookingParams{
		PaymentID: st.PaymentID, ProcessID: in.ProcessID, DebitAccountID: st.AccountID, DebitTransactionID: st.DebitTxn,
		FxContractID: fxContract, DebitCurrency: st.AccountCurrency, DebitAmount: st.DebitAmount,
		CreditCurrency: st.Currency, CreditAmount: amount, FeeCurrency: st.AccountCurrency, FeeAmount: st.FeeAmount,
		ValueDate: st.valueDate(), BeneficiaryName: st.CreditorName,
		BeneficiaryIban: ptr.Optional(st.CreditorIBAN), BeneficiaryBic: ptr.Optional(st.CreditorBIC), OutboxID: &outboxID,
	}); err != nil {
		return fmt.Errorf("payment %s: booking: %w", st.PaymentID, err)
	}
	if !st.Begun { // a process started before its first step began the execution
		err = NewStore(tx).Accept(ctx, st.PaymentID, st.executionTime())
		if err != nil && !errors.Is(err, ErrWrongStatus) {
			return err
		}
		if err != nil {
			// A payment FAILED, DELIVERED, ... cannot be accepted again.
			return process.Failf(ErrTypeWrongStatus, "%s", err.Error())
		}
	}
	st.OutboxID, st.RailSequence, st.ValueDate = outboxID, seq, st.valueDate().Format(time.DateOnly)
	return nil
}

// instruction is the payment as its rail receives it.
func (s submit) instruction(st *SubmitState, amount decimal.Decimal) (Instruction, error) {
	digits, ok := money.MinorUnits(st.Currency)
	if !ok {
		return Instruction{}, fmt.Errorf("payment: currency %q has no minor units", st.Currency)
	}
	return Instruction{
		PaymentID: st.PaymentID, EndToEndID: EndToEndID(cmp.Or(st.ExternalID, st.PaymentID)),
		Amount: amount.StringFixed(int32(digits)), Currency: st.Currency,
		ValueDate:      st.valueDate().Format(time.DateOnly),
		Debtor:         InstructionDebtor{Name: st.TenantID, Account: cmp.Or(st.DebtorAccount, st.AccountID)},
		Creditor:       InstructionCreditor{Name: st.CreditorName, IBAN: st.CreditorIBAN, BIC: st.CreditorBIC},
		RemittanceInfo: st.RemittanceInfo, TenantID: st.TenantID, Details: st.Details,
	}, nil
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

func (s submit) reverseTransaction(ctx context.Context, tx pgx.Tx, in process.StepInput, st *SubmitState) error {
	p, reversed, err := account.ReverseIfPosted(ctx, tx, forwardKey(in, StepCreateTransaction), account.Reversal{
		Reference: in.IdempotencyKey, Description: "payment " + st.PaymentID + " failed",
	})
	if err != nil {
		return fail(err)
	}
	if reversed {
		st.ReversalTxn = p.TransactionID
	}
	return nil
}

func (s submit) reverseLimits(ctx context.Context, tx pgx.Tx, in process.StepInput, st *SubmitState) error {
	if _, err := limit.Reverse(ctx, tx, forwardKey(in, StepBookLimits)); err != nil {
		return fail(err)
	}
	st.LimitsReversed = true
	return nil
}

func (s submit) unwindFx(ctx context.Context, tx pgx.Tx, in process.StepInput, st *SubmitState) error {
	_, unwound, err := fx.UnwindIfBooked(ctx, tx, forwardKey(in, StepBookFx), "payment "+st.PaymentID+" failed")
	if err != nil {
		return fail(err)
	}
	st.Unwound = unwound
	return nil
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
