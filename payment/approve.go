package payment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
)

// ApprovalFilter selects the payments an approval or a denial decides
// on, among those awaiting approvals (AWAITING_APPROVAL, or HELD with
// approvals missing): a tenant's by id (TenantID and PaymentIDs), a
// file's (BatchID), or a filter (TenantID, BatchID, requested in
// [From, To)); at least a tenant or a file. At most Limit a call
// (0: MaxApprove).
type ApprovalFilter struct {
	TenantID   string
	PaymentIDs []string
	BatchID    string
	From, To   time.Time
	Limit      int
}

// MaxApprove bounds the payments one approval or denial decides on.
const MaxApprove = 1000

// Approver is who approves or denies: Principal is the identity counted
// (a token's id: each counts once a payment, and never on a payment it
// submitted), Actor how the audit and the payment name it.
type Approver struct {
	Principal string
	Actor     string
}

// Decided is an approval's or a denial's answer (with DryRun, what it
// would have done: nothing was changed).
type Decided struct {
	// Selected counts the payments the selection found; Own those of
	// them the approver submitted, left alone; Already those it had
	// decided on before (it counts once). A file or a filter passes
	// over both, and counts them (up to the limit) only when nothing
	// else was left.
	Selected int `json:"selected"`
	Own      int `json:"own"`
	Already  int `json:"already"`
	// Approved counts the approvals recorded now; Scheduled the payments
	// they completed, paced now; Waiting those still short of their
	// approvals (or HELD: they count when released); Rejected the
	// payments a denial rejected.
	Approved  int `json:"approved"`
	Scheduled int `json:"scheduled"`
	Waiting   int `json:"waiting"`
	// Paused counts the scheduled ones a pause holds (their tenant's,
	// rail's or file's): they wait for its resume.
	Paused int `json:"paused,omitempty"`
	// Held counts the approved payments that came too late for their
	// day's cut-off under a HOLD rule, or whose rail is inactive: HELD,
	// their approvals kept, until an operator releases them.
	Held int `json:"held,omitempty"`
	// Rejected counts the payments a denial rejected, and the approved
	// ones too late for their day's cut-off under a REJECT rule.
	Rejected int `json:"rejected"`
	// More: the selection found as many as a call decides on; others
	// may match (call again).
	More bool `json:"more,omitempty"`
	// NotAwaiting counts the payments named by id that were not selected:
	// unknown, another tenant's, outside the requested times, or no
	// longer awaiting approval (scheduled, executed, rejected,
	// cancelled).
	NotAwaiting int  `json:"notAwaiting,omitempty"`
	DryRun      bool `json:"dryRun,omitempty"`
}

// ReasonApproved is the status reason of a payment its approvals
// scheduled.
const ReasonApproved = "APPROVED: its approvals are complete"

// errDryRun rolls a dry run's transaction back.
var errDryRun = errors.New("payment: dry run")

// Approve records who's approval of the payments f selects; each that
// has its approvals then, AWAITING_APPROVAL, is paced from its requested
// time (or from now, if that has passed; past its day's cut-off, from
// the next business day) and SCHEDULED with its queue item, in the
// transaction that records the approval, with record's entry. A HELD
// one keeps its approvals until an operator releases it. Naming its own
// payment by id is ErrOwnPayment, and nothing is done.
func (s *Service) Approve(ctx context.Context, f ApprovalFilter, who Approver, dryRun bool, record Record) (Decided, error) {
	return s.decide(ctx, f, who, "APPROVE", "", dryRun, record)
}

// Deny rejects the payments f selects, REJECTED with who's reason, in one
// transaction with record's entry; as Approve, never the approver's own.
func (s *Service) Deny(ctx context.Context, f ApprovalFilter, who Approver, reason string, dryRun bool, record Record) (Decided, error) {
	return s.decide(ctx, f, who, "DENY", reason, dryRun, record)
}

func (s *Service) decide(ctx context.Context, f ApprovalFilter, who Approver, decision, reason string, dryRun bool, record Record) (Decided, error) {
	if who.Principal == "" {
		return Decided{}, ErrNoApprover
	}
	if f.TenantID == "" && f.BatchID == "" {
		return Decided{}, ErrNoSelection
	}
	if decision == "APPROVE" && (s.cfg.Rails == nil || s.cfg.Pacer == nil || s.cfg.Queue == nil) {
		return Decided{}, ErrNoRails
	}
	var keys []string
	for _, id := range f.PaymentIDs {
		keys = append(keys, Key(f.TenantID, id))
	}
	if f.BatchID != "" {
		inFile, err := s.tenantBatchKeys(ctx, f.BatchID, f.TenantID)
		if err != nil {
			return Decided{}, err
		}
		if len(keys) > 0 {
			keys = intersect(keys, inFile)
		} else {
			keys = inFile
		}
		if len(keys) == 0 {
			// A file none of whose payments was taken in (or none of
			// those named): nothing, never "any" (no keys).
			return Decided{DryRun: dryRun}, nil
		}
	}
	from, to := f.From, f.To
	if from.IsZero() {
		from = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if to.IsZero() {
		to = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	limit := f.Limit
	if limit <= 0 || limit > MaxApprove {
		limit = MaxApprove
	}
	var def string
	if decision == "APPROVE" {
		var err error
		if def, err = s.defaultPacingConfig(ctx); err != nil {
			return Decided{}, err
		}
	}
	var out Decided
	err := pgx.BeginFunc(ctx, s.cfg.Store.db, func(tx pgx.Tx) error {
		out = Decided{DryRun: dryRun}
		q := dbsqlc.New(tx)
		// Before any payment is locked: a pause committed first holds
		// the payments approved now (mover.stillPaused), one after them
		// finds them SCHEDULED.
		if err := q.LockPausesShared(ctx); err != nil {
			return fmt.Errorf("payment: pauses: %w", err)
		}
		// Payments named by id are all selected (naming one's own is
		// refused); a file or a filter passes over what the approver
		// submitted or decided on already, so that its next call goes on
		// past the first MaxApprove.
		skip := ""
		if len(f.PaymentIDs) == 0 {
			skip = who.Principal
		}
		rows, err := q.MatchAwaitingApproval(ctx, dbsqlc.MatchAwaitingApprovalParams{TenantID: f.TenantID, PaymentIds: keys,
			RequestedFrom: from, RequestedTo: to, SkipPrincipal: skip, MaxRows: int32(limit)})
		if err != nil {
			return fmt.Errorf("payment: select payments awaiting approval: %w", err)
		}
		out.Selected, out.More = len(rows), len(rows) == limit
		if len(f.PaymentIDs) > 0 && !out.More {
			out.NotAwaiting = len(slices.Compact(slices.Sorted(slices.Values(keys)))) - len(rows)
		}
		if skip != "" && len(rows) == 0 {
			// Nothing left for this approver: say why (what it submitted,
			// what it decided on already) from those it passed over.
			passed, err := q.MatchAwaitingApproval(ctx, dbsqlc.MatchAwaitingApprovalParams{TenantID: f.TenantID, PaymentIds: keys,
				RequestedFrom: from, RequestedTo: to, MaxRows: int32(limit)})
			if err != nil {
				return fmt.Errorf("payment: select payments awaiting approval: %w", err)
			}
			for _, r := range passed {
				if r.Submitter == who.Principal {
					out.Own++
				} else {
					out.Already++
				}
			}
			return nil
		}
		var ids []string
		byKey := make(map[string]dbsqlc.MatchAwaitingApprovalRow, len(rows))
		for _, r := range rows {
			if r.Submitter != "" && r.Submitter == who.Principal {
				out.Own++
				continue
			}
			ids = append(ids, r.PaymentID)
			byKey[r.PaymentID] = r
		}
		if out.Own > 0 && len(f.PaymentIDs) > 0 {
			return ErrOwnPayment
		}
		decided, err := q.InsertApprovals(ctx, dbsqlc.InsertApprovalsParams{PaymentIds: ids, Principal: who.Principal,
			Decision: decision, Actor: who.Actor, Reason: reason})
		if err != nil {
			return fmt.Errorf("payment: record %d decisions: %w", len(ids), err)
		}
		out.Already = len(ids) - len(decided)
		n := 0
		if decision == "DENY" {
			if n, err = s.reject(ctx, tx, ids, who, reason, &out); err != nil {
				return err
			}
		} else {
			out.Approved = len(decided)
			if n, err = s.scheduleApproved(ctx, tx, def, ids, byKey, &out); err != nil {
				return err
			}
			n += out.Approved
		}
		if dryRun {
			return errDryRun
		}
		if record == nil || n == 0 {
			return nil
		}
		return record(ctx, tx, n)
	})
	if errors.Is(err, errDryRun) {
		return out, nil
	}
	return out, err
}

// reject ends the denied payments REJECTED, their parked queue items (a
// cut-off's hold) done.
func (s *Service) reject(ctx context.Context, tx pgx.Tx, ids []string, who Approver, reason string, out *Decided) (int, error) {
	text := "DENIED by " + who.Actor
	if reason != "" {
		text += ": " + reason
	}
	n, err := s.rejectTx(ctx, tx, ids, text, StatusAwaitingApproval, StatusHeld)
	out.Rejected = n
	return n, err
}

// scheduleApproved paces the payments among ids whose approvals are all
// given now: from their requested time, or from now; a roll past a
// cut-off as a release's (the next business day).
func (s *Service) scheduleApproved(ctx context.Context, tx pgx.Tx, def string, ids []string, rows map[string]dbsqlc.MatchAwaitingApprovalRow, out *Decided) (int, error) {
	states, err := dbsqlc.New(tx).ApprovalStates(ctx, ids)
	if err != nil {
		return 0, fmt.Errorf("payment: approval states: %w", err)
	}
	m := s.mover(tx, def)
	// A roll's day (the sweep's, for a ROLL tenant) is kept; a payment
	// whose day's cut-off has passed, or whose day has no slot left,
	// meets its tenant's rule, as one the sweep found short of its
	// approvals would.
	m.parked, m.roll, m.ruled, m.fromStatuses = true, true, true, []string{string(StatusAwaitingApproval)}
	m.lateFrom, m.reason = StatusAwaitingApproval, ReasonApproved
	for _, st := range states {
		r := rows[st.PaymentID]
		if st.Denied || st.Approved < st.Needed || Status(r.Status) != StatusAwaitingApproval {
			out.Waiting++
			if err := dbsqlc.New(tx).SetApprovalReason(ctx, dbsqlc.SetApprovalReasonParams{PaymentID: st.PaymentID,
				StatusReason: approvalReason(int(st.Approved), int(st.Needed), st.Rule)}); err != nil {
				return 0, fmt.Errorf("payment %s: approval reason: %w", st.PaymentID, err)
			}
			continue
		}
		if err := m.add(ctx, dbsqlc.WaitingOnRailsRow{PaymentID: r.PaymentID, TenantID: r.TenantID, Rail: r.Rail, ExecutionDate: r.ExecutionDate,
			RequestedExecutionTime: r.RequestedExecutionTime, PacingConfig: r.PacingConfig, TenantPacingConfig: r.TenantPacingConfig,
			Priority: r.Priority, CreatedAt: r.CreatedAt}); err != nil {
			return 0, err
		}
	}
	if len(m.todo) == 0 && len(m.placed) == 0 {
		return 0, nil
	}
	if err := m.place(ctx); err != nil {
		return 0, err
	}
	var res Repaced
	if _, err := m.store(ctx, &res); err != nil {
		return 0, err
	}
	out.Scheduled = res.Moved + res.Rolled + res.Paused
	out.Paused, out.Held, out.Rejected = res.Paused, res.Held, res.Rejected
	// The rest were cancelled meanwhile.
	return out.Scheduled + out.Held + out.Rejected, nil
}

func intersect(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, k := range b {
		in[k] = true
	}
	var out []string
	for _, k := range a {
		if in[k] {
			out = append(out, k)
		}
	}
	return out
}
