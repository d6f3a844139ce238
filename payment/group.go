package payment

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/process"
)

// groupLinger is how long a sub-group waits, after its first payment
// was let go, for the payments let go after it: its limiter lets each go
// at its own instant (at 100/s, one every 10 ms), and those close
// together commit together. It is the group's span, so a group commits
// once, when its last payment is let go: at 100/s, 25 payments a commit
// rather than 10 with 100 ms, which cut PostgreSQL's CPU a payment by a
// third (docs/benchmarks.md). Their execution times are the limiter's,
// not the commit's: a payment's rail instruction leaves up to this much
// later, its execution counts when it was let go.
const groupLinger = dispatch.GroupSpan

// GroupExecutor executes a batch execution's group of payments together
// (PAYMENT's exec_mode BATCH): each payment is held to its slot as
// BatchExecutor holds it (its limiter decides its execution time), and
// those let go together run SubmitPayment as one group
// (process.Activities.AdvanceGroup): the debits in one statement, the
// bookings, rail instructions and status changes set-based, and a step
// one transaction for all. Each payment still succeeds, fails or
// compensates on its own, and one the group could not do (an account
// short of money, an FX payment, a limit-based account's limits) runs
// the step alone, as in BatchExecutor. One whose process has to wait or
// failed is handed to its own PaymentExecution, as from BatchExecutor.
func GroupExecutor(a *ExecActivities) dispatch.GroupExecutor {
	return func(ctx context.Context, items []dispatch.BatchItem, run dispatch.Run) []dispatch.Outcome {
		out := make([]dispatch.Outcome, len(items))
		type held struct {
			k  int // the item's index; -1: answered already
			in ExecutionInput
			at time.Time
		}
		ready := make(chan held, len(items))
		// The payments' contexts and statuses in one read, not one each;
		// a payment the read missed (or all, if it failed) reads its own.
		stored := a.storedContexts(ctx, items)
		for k, it := range items {
			go func() {
				h := held{k: -1}
				defer func() {
					if p := recover(); p != nil {
						out[k] = dispatch.Outcome{Err: fmt.Errorf("payment %s: execution panicked: %v", it.ID, p)}
					}
					ready <- h
				}()
				pc, err := execContext(it.Context)
				if err != nil {
					out[k] = dispatch.Outcome{Err: fmt.Errorf("payment %s: unreadable context: %w", it.ID, err)}
					return
				}
				in := ExecutionInput{PaymentID: it.ID, Context: pc, NotBefore: it.At, WorkflowID: run.WorkflowID, Ref: run.String()}
				var sc *StoredContext
				if c, ok := stored[it.ID]; ok {
					sc = &c
				}
				at, runs, done, err := a.begin(ctx, &in, sc)
				if !runs {
					out[k] = dispatch.Outcome{Done: done, Err: err}
					return
				}
				h = held{k: k, in: in, at: at}
			}()
		}
		for pending := len(items); pending > 0; {
			h := <-ready
			pending--
			if h.k < 0 {
				continue
			}
			sub := []held{h}
			linger := time.NewTimer(groupLinger)
		collect:
			for pending > 0 {
				select {
				case h := <-ready:
					pending--
					if h.k >= 0 {
						sub = append(sub, h)
					}
				case <-linger.C:
					break collect
				}
			}
			linger.Stop()
			if len(sub) == 1 {
				// alone: the path of one payment (its statements on their
				// generic plans) costs less than a group of one
				out[h.k] = a.executeAlone(ctx, h.in, h.at)
				continue
			}
			ins := make([]ExecutionInput, len(sub))
			ats := make([]time.Time, len(sub))
			for i, h := range sub {
				ins[i], ats[i] = h.in, h.at
			}
			for i, o := range a.executeGroup(ctx, ins, ats, run.String()) {
				out[sub[i].k] = o
			}
		}
		return out
	}
}

// storedContexts reads the group's payments' contexts and statuses
// together; nil when the read failed (each payment then reads its own,
// and reports its own error).
func (a *ExecActivities) storedContexts(ctx context.Context, items []dispatch.BatchItem) map[string]StoredContext {
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	got, err := a.cfg.Store.ContextsAndStatuses(ctx, ids)
	if err != nil {
		return nil
	}
	return got
}

// executeAlone is Execution's end for a payment let go alone.
func (a *ExecActivities) executeAlone(ctx context.Context, in ExecutionInput, at time.Time) dispatch.Outcome {
	ctx, span := a.executionSpan(ctx, in, at)
	done, err := a.execute(ctx, in, at)
	if span != nil {
		endSpan(span, done, err)
	}
	return dispatch.Outcome{Done: done, Err: err}
}

// executeGroup runs the SubmitPayment of payments let go together, as
// execute runs one: started together, advanced while no step has to
// wait, and those that succeeded finished in one statement.
func (a *ExecActivities) executeGroup(ctx context.Context, ins []ExecutionInput, ats []time.Time, ref string) []dispatch.Outcome {
	out := make([]dispatch.Outcome, len(ins))
	starts := make([]process.StartInput, len(ins))
	for i, in := range ins {
		data, err := json.Marshal(SubmitData(in.PaymentID, in.Context, ats[i]))
		if err != nil {
			// cannot happen for a SubmitState; its process then starts
			// from the one it had
			data = nil
		}
		starts[i] = process.StartInput{Type: SubmitPaymentType, BusinessKey: in.PaymentID, Data: data, WorkflowID: in.WorkflowID}
	}
	spans := make([]func(done bool, err error), len(ins))
	for i, in := range ins {
		if _, span := a.executionSpan(ctx, in, ats[i]); span != nil {
			spans[i] = func(done bool, err error) { endSpan(span, done, err) }
		}
	}
	var finish []int
	for i, o := range a.cfg.Process.AdvanceGroup(ctx, starts) {
		switch {
		case o.Err != nil:
			out[i].Err = o.Err
		case !o.State.Status.Final():
		case o.State.Status != process.StatusSucceeded:
			out[i].Done = true // FAILED with its code, by SubmitPayment's OnFailed
		default:
			finish = append(finish, i)
		}
	}
	if len(finish) > 0 {
		ids := make([]string, len(finish))
		for j, i := range finish {
			ids[j] = ins[i].PaymentID
		}
		finished, err := a.cfg.Store.FinishMany(ctx, ids, ref)
		for _, i := range finish {
			switch {
			case err != nil:
				out[i] = dispatch.Outcome{Done: true, Err: err}
			case finished[ins[i].PaymentID]:
				out[i].Done = true
			default:
				// not ACCEPTED, nor answered by its rail: Finish says why
				out[i] = dispatch.Outcome{Done: true, Err: a.Finish(ctx, ins[i].PaymentID, ref)}
			}
		}
	}
	for i, end := range spans {
		if end != nil {
			end(out[i].Done, out[i].Err)
		}
	}
	return out
}

// FinishMany is Finish for a group's payments under one execution, in
// one statement: the keys finished. One not returned is in another
// status (Finish tells which).
func (s *Store) FinishMany(ctx context.Context, ids []string, ref string) (map[string]bool, error) {
	got, err := s.q.FinishExecutions(ctx, dbsqlc.FinishExecutionsParams{PaymentIds: ids, ExecutionRef: &ref})
	if err != nil {
		return nil, fmt.Errorf("payment: finish %d payments: %w", len(ids), err)
	}
	out := make(map[string]bool, len(got))
	for _, id := range got {
		out[id] = true
	}
	return out, nil
}

// errAlone takes a payment out of its group's step: it runs the step
// alone, where its case is handled (and its failure recorded) one by one.
func errAlone(paymentID, why string) error {
	return fmt.Errorf("payment %s: %s: runs alone", paymentID, why)
}

// createTransactionGroup is createTransaction for a group: their
// executions begin in one statement, their accounts are read in one and
// debited in one (account.DebitMany). A payment whose execution cannot
// begin here (not SCHEDULED), whose account is not its tenant's, that
// needs FX, or whose debit is refused runs the step alone.
func (s submit) createTransactionGroup(ctx context.Context, tx pgx.Tx, ins []process.StepInput, sts []*SubmitState) ([]error, error) {
	errs := make([]error, len(ins))
	failed := false
	amounts := make([]decimal.Decimal, len(sts))
	p := dbsqlc.BeginExecutionsParams{}
	var accountIDs []string
	for i, st := range sts {
		amount, err := st.amount()
		if err != nil {
			errs[i], failed = err, true
			continue
		}
		amounts[i] = amount
		p.PaymentIds = append(p.PaymentIds, st.PaymentID)
		p.AcceptedAts = append(p.AcceptedAts, st.executionTime())
		accountIDs = append(accountIDs, st.AccountID)
	}
	if failed {
		return errs, nil
	}
	begun, err := dbsqlc.New(tx).BeginExecutions(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("payment: begin the executions of %d payments: %w", len(p.PaymentIds), err)
	}
	slices.Sort(accountIDs)
	accts, err := account.GetMany(ctx, tx, slices.Compact(accountIDs))
	if err != nil {
		return nil, err
	}
	isBegun := make(map[string]bool, len(begun))
	for _, id := range begun {
		isBegun[id] = true
	}
	for i, st := range sts {
		acct, ok := accts[st.AccountID]
		switch {
		case !isBegun[st.PaymentID]:
			errs[i] = errAlone(st.PaymentID, "not SCHEDULED")
		case !ok || acct.TenantID != st.TenantID:
			errs[i] = errAlone(st.PaymentID, "no account "+st.AccountID+" for its tenant")
		case acct.Currency != st.Currency:
			errs[i] = errAlone(st.PaymentID, "needs FX")
		default:
			continue
		}
		failed = true
	}
	if failed {
		return errs, nil
	}
	entries := make([]account.Entry, len(sts))
	for i, st := range sts {
		acct := accts[st.AccountID]
		st.AccountCurrency, st.LimitBased, st.FXNeeded, st.Begun = acct.Currency, acct.LimitBased, false, true
		entries[i] = account.Entry{
			AccountID: acct.AccountID, Amount: amounts[i], Currency: acct.Currency, ChargeFee: true,
			Reference: ins[i].IdempotencyKey, Description: "payment " + st.PaymentID, ValueDate: st.valueDate(),
		}
	}
	posted, err := account.DebitMany(ctx, tx, entries)
	if err != nil {
		return nil, err
	}
	for i, st := range sts {
		if posted[i].Err != nil {
			errs[i], failed = posted[i].Err, true
			continue
		}
		st.DebitTxn, st.DebitAmount, st.FeeAmount = posted[i].TransactionID, amounts[i], posted[i].Fee
	}
	if failed {
		return errs, nil
	}
	return nil, nil
}

// createPaymentGroup is createPayment for a group: their rail
// instructions enqueued together (outbox.EnqueueBatch) and their bookings
// recorded in one statement. A payment with an FX contract, or whose
// execution its first step did not begin, runs the step alone.
func (s submit) createPaymentGroup(ctx context.Context, tx pgx.Tx, ins []process.StepInput, sts []*SubmitState) ([]error, error) {
	errs := make([]error, len(ins))
	failed := false
	instrs := make([]outbox.Instruction, len(sts))
	amounts := make([]decimal.Decimal, len(sts))
	for i, st := range sts {
		amount, err := st.amount()
		if err == nil && (st.DebitTxn == uuid.Nil || st.FxContract != uuid.Nil || !st.Begun) {
			err = errAlone(st.PaymentID, "no debit, an FX contract or an execution begun before")
		}
		var payload []byte
		if err == nil {
			var instr Instruction
			if instr, err = s.instruction(st, amount); err == nil {
				payload, err = json.Marshal(instr)
			}
		}
		if err != nil {
			errs[i], failed = err, true
			continue
		}
		amounts[i] = amount
		instrs[i] = outbox.Instruction{
			InstructionID: st.PaymentID, ParticipantID: st.TenantID, IdempotencyKey: st.PaymentID,
			RailType: cmp.Or(st.Rail, s.cfg.RailType), Payload: payload,
			// the group's trace context: a step's own is its execution's
			TraceParent: traceParent(ctx),
		}
	}
	if failed {
		return errs, nil
	}
	enq, err := outbox.EnqueueBatch(ctx, tx, instrs)
	if err != nil {
		return nil, fmt.Errorf("payment: enqueue the rail instructions of %d payments: %w", len(instrs), err)
	}
	b := dbsqlc.InsertBookingsParams{}
	for i, st := range sts {
		b.PaymentIds = append(b.PaymentIds, st.PaymentID)
		b.ProcessIds = append(b.ProcessIds, ins[i].ProcessID)
		b.DebitAccountIds = append(b.DebitAccountIds, st.AccountID)
		b.DebitTransactionIds = append(b.DebitTransactionIds, st.DebitTxn)
		b.DebitCurrencies = append(b.DebitCurrencies, st.AccountCurrency)
		b.DebitAmounts = append(b.DebitAmounts, st.DebitAmount)
		b.CreditCurrencies = append(b.CreditCurrencies, st.Currency)
		b.CreditAmounts = append(b.CreditAmounts, amounts[i])
		b.FeeAmounts = append(b.FeeAmounts, st.FeeAmount)
		b.ValueDates = append(b.ValueDates, st.valueDate())
		b.BeneficiaryNames = append(b.BeneficiaryNames, st.CreditorName)
		b.BeneficiaryIbans = append(b.BeneficiaryIbans, st.CreditorIBAN)
		b.BeneficiaryBics = append(b.BeneficiaryBics, st.CreditorBIC)
		b.OutboxIds = append(b.OutboxIds, enq[i].OutboxID)
	}
	if _, err := dbsqlc.New(tx).InsertBookings(ctx, b); err != nil {
		return nil, fmt.Errorf("payment: bookings of %d payments: %w", len(sts), err)
	}
	for i, st := range sts {
		st.OutboxID, st.RailSequence, st.ValueDate = enq[i].OutboxID, enq[i].SequenceID, st.valueDate().Format(time.DateOnly)
	}
	return nil, nil
}
