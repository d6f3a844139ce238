package payment

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

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
// on is left as it is.
func OutboxHooks() outbox.Hooks {
	return outbox.Hooks{OnDelivered: delivered, OnDead: returned}
}

func delivered(ctx context.Context, tx pgx.Tx, ds []outbox.Delivery) error {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.Message.InstructionID
	}
	if _, err := dbsqlc.New(tx).DeliverPayments(ctx, ids); err != nil {
		return fmt.Errorf("payment: record %d deliveries: %w", len(ids), err)
	}
	return nil
}

func returned(ctx context.Context, tx pgx.Tx, dead []outbox.DeadLetter) error {
	q := dbsqlc.New(tx)
	for _, d := range dead {
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
			TransactionID: b.DebitTransactionID, Reference: b.ProcessID.String() + ":RETURN",
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
