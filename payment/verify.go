package payment

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/internal/ptr"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/process"
	"github.com/paydispatch/paydispatch/routing"
)

// The payments' own invariants, beside the ledger's (ledger.Verify).
const (
	// RuleExecutedDebit: an executed payment has exactly one debit, not
	// reversed.
	RuleExecutedDebit ledger.Rule = "executed_payment_one_debit"
	// RuleUndoneHoldsNothing: a FAILED or RETURNED payment's debit and
	// limit bookings are reversed, a FAILED one's FX contract unwound.
	RuleUndoneHoldsNothing ledger.Rule = "undone_payment_holds_nothing"
	// RuleProcessStatus: a payment's status follows its SubmitPayment
	// process.
	RuleProcessStatus ledger.Rule = "payment_follows_process"
	// RuleProcessLog: a process's status is what its log replays to.
	RuleProcessLog ledger.Rule = "process_log"
	// RuleOneInstruction: a booked payment has exactly one rail
	// instruction, and every instruction a booked payment.
	RuleOneInstruction ledger.Rule = "booking_one_instruction"
	// RuleDelivery: DELIVERED was dispatched exactly once; RETURNED never,
	// and its money was given back.
	RuleDelivery ledger.Rule = "delivery"
	// RuleCancelledUntouched: a CANCELLED payment was never debited,
	// booked or sent to the rail.
	RuleCancelledUntouched ledger.Rule = "cancelled_payment_untouched"
	// RuleOneClaim: a payment is the one its tenant's id was claimed for,
	// so no two payments share an id.
	RuleOneClaim ledger.Rule = "payment_id_claimed_once"
	// RuleBeforeCutoff: no instruction reached its rail at or after that
	// rail's cut-off on the payment's execution date (the rail's cut-off
	// as configured now).
	RuleBeforeCutoff ledger.Rule = "instruction_before_cutoff"
	// RuleApproved: no payment was executed (its execution begun, or
	// debited) without the approvals its tenant's rules asked of it.
	RuleApproved ledger.Rule = "executed_with_its_approvals"
)

// Verify checks the invariants of the money paydispatch moved, on a live
// database: the ledger's (ledger.Verify), the process manager's (every
// log replays to its process's status), and the payments' across them
// (the rules above). It lists every violation, none when all hold.
func Verify(ctx context.Context, db ledger.DBTX) ([]ledger.Violation, error) {
	// One snapshot for every rule: on a live database, a change that
	// commits between two of its queries would show half done.
	if b, ok := db.(interface {
		BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
	}); ok {
		tx, err := b.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return nil, fmt.Errorf("payment: verify: begin: %w", err)
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		db = tx
	}
	out, err := ledger.Verify(ctx, db)
	if err != nil {
		return out, err
	}
	add := func(rule ledger.Rule, id, format string, args ...any) {
		out = append(out, ledger.Violation{Rule: rule, Row: "payments " + id, Detail: fmt.Sprintf(format, args...)})
	}
	mismatches, err := process.Verify(ctx, db.(process.DB))
	if err != nil {
		return out, fmt.Errorf("payment: verify processes: %w", err)
	}
	for _, m := range mismatches {
		out = append(out, ledger.Violation{Rule: RuleProcessLog, Row: "process_instance " + m.Instance.ID.String(), Detail: m.String()})
	}
	q := dbsqlc.New(db)
	debits, err := q.ExecutedWithoutOneDebit(ctx)
	if err != nil {
		return out, fmt.Errorf("payment: verify debits: %w", err)
	}
	for _, r := range debits {
		add(RuleExecutedDebit, r.PaymentID, "%s with %d debit(s), %d reversed", r.Status, r.Debits, r.Reversals)
	}
	undone, err := q.UndoneWithMoneyHeld(ctx)
	if err != nil {
		return out, fmt.Errorf("payment: verify undone payments: %w", err)
	}
	for _, r := range undone {
		if r.UnreversedDebits > 0 || r.UnreversedLimits > 0 || r.BookedContracts > 0 {
			add(RuleUndoneHoldsNothing, r.PaymentID, "%s holding %d unreversed debit(s), %d limit booking(s), %d booked FX contract(s)",
				r.Status, r.UnreversedDebits, r.UnreversedLimits, r.BookedContracts)
		}
	}
	disagree, err := q.ProcessDisagrees(ctx)
	if err != nil {
		return out, fmt.Errorf("payment: verify processes of payments: %w", err)
	}
	for _, r := range disagree {
		add(RuleProcessStatus, r.PaymentID, "payment %s, its process %s", r.Status, r.ProcessStatus)
	}
	instructions, err := q.BookingWithoutOneInstruction(ctx)
	if err != nil {
		return out, fmt.Errorf("payment: verify rail instructions: %w", err)
	}
	for _, r := range instructions {
		if !r.Booked {
			add(RuleOneInstruction, r.PaymentID, "a rail instruction for a payment with no booking")
		} else {
			add(RuleOneInstruction, r.PaymentID, "booked with %d rail instruction(s)", r.Instructions)
		}
	}
	delivery, err := q.DeliveryDisagrees(ctx)
	if err != nil {
		return out, fmt.Errorf("payment: verify deliveries: %w", err)
	}
	for _, r := range delivery {
		switch {
		case !r.Archived:
			// The retention deleted the instruction's attempts: a
			// RETURNED payment's return is still in the money records.
			if r.Status == string(StatusReturned) && !r.Returned {
				add(RuleDelivery, r.PaymentID, "RETURNED, its return not recorded")
			}
		case r.Status == string(StatusDelivered) && r.Dispatched != 1:
			add(RuleDelivery, r.PaymentID, "DELIVERED with %d DISPATCHED attempt(s)", r.Dispatched)
		case r.Status == string(StatusReturned) && (r.Dispatched != 0 || !r.Returned):
			add(RuleDelivery, r.PaymentID, "RETURNED with %d DISPATCHED attempt(s), its return recorded: %t", r.Dispatched, r.Returned)
		}
	}
	cancelled, err := q.CancelledButMoved(ctx)
	if err != nil {
		return out, fmt.Errorf("payment: verify cancelled payments: %w", err)
	}
	for _, r := range cancelled {
		add(RuleCancelledUntouched, r.PaymentID, "CANCELLED with %d debit(s), booked %t, a rail instruction %t", r.Debits, r.Booked, r.Instructed)
	}
	claims, err := q.PaymentsWithoutTheirClaim(ctx)
	if err != nil {
		return out, fmt.Errorf("payment: verify the ids' claims: %w", err)
	}
	for _, r := range claims {
		add(RuleOneClaim, r.PaymentID, "id %q of tenant %s is claimed by %s", r.ExternalID, r.TenantID, ptr.Deref(r.ClaimedBy))
	}
	unapproved, err := q.ExecutedWithoutApprovals(ctx)
	if err != nil {
		return out, fmt.Errorf("payment: verify approvals: %w", err)
	}
	for _, r := range unapproved {
		add(RuleApproved, r.PaymentID, "%s with %d of the %d approvals its rule asks", r.Status, r.Approved, r.Needed)
	}
	late, err := lateInstructions(ctx, db, q)
	if err != nil {
		return out, err
	}
	for _, l := range late {
		add(RuleBeforeCutoff, l.payment, "sent to rail %s at %s, after its cut-off at %s on %s", l.rail,
			l.sent.UTC().Format(time.RFC3339Nano), l.cutoff.UTC().Format(time.RFC3339), l.date)
	}
	return out, nil
}

type lateInstruction struct {
	payment, rail, date string
	sent, cutoff        time.Time
}

// lateInstructions are the payments whose instruction reached their rail
// at or after the cut-off of their execution date.
func lateInstructions(ctx context.Context, db ledger.DBTX, q *dbsqlc.Queries) ([]lateInstruction, error) {
	rails, err := routing.ListRails(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("payment: verify cut-offs: %w", err)
	}
	byName := make(map[string]routing.Rail, len(rails))
	for _, r := range rails {
		if r.Cutoff != 0 {
			byName[r.Name] = r
		}
	}
	if len(byName) == 0 {
		return nil, nil
	}
	sent, err := q.InstructionsSent(ctx)
	if err != nil {
		return nil, fmt.Errorf("payment: verify cut-offs: %w", err)
	}
	var out []lateInstruction
	for _, s := range sent {
		rail, ok := byName[s.Rail]
		if !ok {
			continue
		}
		day, err := rail.DayOn(calendar.DateOf(s.ExecutionDate, time.UTC))
		if err != nil {
			return nil, fmt.Errorf("payment: verify cut-offs of rail %s: %w", rail.Name, err)
		}
		if day.Late(s.SentAt) {
			out = append(out, lateInstruction{payment: s.PaymentID, rail: rail.Name, date: day.Date.String(), sent: s.SentAt, cutoff: day.Cutoff})
		}
	}
	return out, nil
}
