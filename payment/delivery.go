package payment

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/limit"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/process"
)

// OutboxHooks are the payments' reactions to their rail's final answer,
// each in the transaction that records it (package outbox): a payment the
// rail took becomes DELIVERED; one it refused for good (or that could not
// be sent) is RETURNED — its debit reversed, its limit bookings reversed,
// the rail's code recorded. Both are idempotent: a payment already moved
// on is left as it is. An operator's requeue of a returned payment's
// instruction debits it again first (redrive).
//
// The outbox also carries the payments' own events (EventRailType), which
// are no instruction: the hooks leave them alone.
func OutboxHooks() outbox.Hooks {
	return outbox.Hooks{OnDelivered: delivered, OnDead: returned, OnRequeue: redrive}
}

func delivered(ctx context.Context, tx pgx.Tx, ds []outbox.Delivery) error {
	ids := instructionIDs(ds, func(d outbox.Delivery) outbox.Message { return d.Message })
	if len(ids) == 0 {
		return nil
	}
	if _, err := dbsqlc.New(tx).DeliverPayments(ctx, ids); err != nil {
		return fmt.Errorf("payment: record %d deliveries: %w", len(ids), err)
	}
	return nil
}

// instructionIDs is the ids of the payments' instructions among xs (not
// the events').
func instructionIDs[T any](xs []T, message func(T) outbox.Message) []string {
	ids := make([]string, 0, len(xs))
	for _, x := range xs {
		if m := message(x); m.RailType != EventRailType {
			ids = append(ids, m.InstructionID)
		}
	}
	return ids
}

func returned(ctx context.Context, tx pgx.Tx, dead []outbox.DeadLetter) error {
	q := dbsqlc.New(tx)
	ids := instructionIDs(dead, func(d outbox.DeadLetter) outbox.Message { return d.Message })
	if len(ids) == 0 {
		return nil
	}
	if err := q.LockPaymentsToReturn(ctx, ids); err != nil {
		return fmt.Errorf("payment: lock the payments to return: %w", err)
	}
	for _, d := range dead {
		if d.Message.RailType == EventRailType {
			continue
		}
		id := d.Message.InstructionID
		b, err := q.GetBooking(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // not a payment's instruction
		}
		if err != nil {
			return fmt.Errorf("payment %s: booking: %w", id, err)
		}
		code := d.Result.Code
		if code == "" {
			code = d.ErrorCode
		}
		reason := code
		if d.Result.Message != "" {
			reason += ": " + d.Result.Message
		}
		n, err := q.ReturnPayment(ctx, dbsqlc.ReturnPaymentParams{PaymentID: id, StatusReason: &reason})
		if err != nil {
			return fmt.Errorf("payment %s: return: %w", id, err)
		}
		if n == 0 {
			continue // returned already, or not executed
		}
		// The money goes back: the debit reversed (the account's fee too:
		// the payment never happened), the limits the payment used freed.
		p, err := account.Reverse(ctx, tx, account.Reversal{
			TransactionID: b.DebitTransactionID, Reference: returnReference(b.ProcessID, int(b.Redrives)),
			Description: "payment " + id + " returned by the rail: " + code,
		})
		if err != nil {
			return fmt.Errorf("payment %s: give the money back: %w", id, err)
		}
		if _, err := limit.Reverse(ctx, tx, process.ID(SubmitPaymentType, id).String()+":"+StepBookLimits); err != nil {
			return fmt.Errorf("payment %s: free its limits: %w", id, err)
		}
		if _, err := q.SetBookingReturn(ctx, dbsqlc.SetBookingReturnParams{
			PaymentID: id, ReturnTransactionID: &p.TransactionID, ReturnCode: &code,
		}); err != nil {
			return fmt.Errorf("payment %s: record the return: %w", id, err)
		}
	}
	return nil
}

// returnReference is the ledger reference of the reversal that gives a
// returned payment's money back: one per debit (the first, then each
// redrive's).
func returnReference(processID uuid.UUID, redrives int) string {
	if redrives == 0 {
		return processID.String() + ":RETURN"
	}
	return processID.String() + ":RETURN:" + strconv.Itoa(redrives)
}

// redriveReference is the ledger reference of a payment's n-th debit
// after its first (payment_debit_references in SQL).
func redriveReference(processID uuid.UUID, n int) string {
	return processID.String() + ":Redrive:" + strconv.Itoa(n)
}

// redrive debits RETURNED payments again before their instructions go
// out again: the same amount from the same account (the account's fee
// as it is now), the payment PROCESSING again, its booking naming the
// new debit, which a second return reverses. The limits the return freed
// are not booked again: a redrive is an operator's decision, taken over
// them. A payment whose account cannot pay now stays RETURNED and its
// instruction dead (refused, with the ledger's reason); an instruction
// whose payment is not RETURNED is refused too. Instructions that are no
// payment's go out as they are.
func redrive(ctx context.Context, tx pgx.Tx, msgs []outbox.Message) (map[uuid.UUID]string, error) {
	q := dbsqlc.New(tx)
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.InstructionID
	}
	rows, err := q.RedriveBookings(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("payment: bookings to redrive: %w", err)
	}
	bookings := make(map[string]dbsqlc.PaymentBooking, len(rows))
	for _, b := range rows {
		bookings[b.PaymentID] = b
	}
	refused := map[uuid.UUID]string{}
	for _, m := range msgs {
		b, ok := bookings[m.InstructionID]
		if !ok {
			if _, err := q.GetBooking(ctx, m.InstructionID); errors.Is(err, pgx.ErrNoRows) {
				continue // not a payment's instruction
			} else if err != nil {
				return nil, fmt.Errorf("payment %s: booking: %w", m.InstructionID, err)
			}
			refused[m.OutboxID] = "payment " + m.InstructionID + " is not RETURNED: its money was not given back, so its instruction is not sent again"
			continue
		}
		n := int(b.Redrives) + 1
		posted, err := account.Debit(ctx, tx, account.Entry{
			AccountID: b.DebitAccountID, Amount: b.DebitAmount, Currency: b.DebitCurrency, ChargeFee: true,
			Reference:   redriveReference(b.ProcessID, n),
			Description: "payment " + m.InstructionID + " sent again by an operator (redrive " + strconv.Itoa(n) + ")",
		})
		var le *ledger.Refusal
		if errors.As(err, &le) {
			refused[m.OutboxID] = "payment " + m.InstructionID + " cannot be debited again: " + le.Error()
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("payment %s: debit again: %w", m.InstructionID, err)
		}
		if posted.Replayed { // the booking's count and the ledger disagree: leave it to an engineer
			return nil, fmt.Errorf("payment %s: redrive debit %s was posted before", m.InstructionID, redriveReference(b.ProcessID, n))
		}
		if n, err := q.RedrivePayment(ctx, dbsqlc.RedrivePaymentParams{PaymentID: m.InstructionID, DebitTransactionID: posted.TransactionID}); err != nil {
			return nil, fmt.Errorf("payment %s: redrive: %w", m.InstructionID, err)
		} else if n != 1 {
			return nil, fmt.Errorf("payment %s: redrive moved %d payments, want 1", m.InstructionID, n)
		}
	}
	return refused, nil
}

// RequeuedHook is what a payment requeued from the dispatch queue's dead
// letters needs (deadletter.Service.OnRequeue): its new slot is of the
// config named, so its execution is held to that config's windows, and
// never more of them go in one window than it allows, however late
// their workers are.
func RequeuedHook(ctx context.Context, tx pgx.Tx, paymentIDs []string, config string) error {
	if _, err := dbsqlc.New(tx).SetPacingConfig(ctx, dbsqlc.SetPacingConfigParams{PacingConfig: config, PaymentIds: paymentIDs}); err != nil {
		return fmt.Errorf("payment: requeued under %s: %w", config, err)
	}
	return nil
}
