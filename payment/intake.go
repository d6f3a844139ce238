package payment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/routing"
)

// Intake is payments that arrived together through one way in: a call of
// the API, a bulk file, a chunk of Kafka records. Service.Take applies
// the intake policy to them, the same whatever the way in.
type Intake struct {
	// Source is the way in (routing.SourceAPI, SourceFile, SourceKafka):
	// the routing rules and the controls see it. Payments from the API
	// are each taken on their own (their own Phase A); a file's and a
	// chunk's are taken as one batch.
	Source   string
	Requests []Request
	// Lines are each request's line in its file (nil: 1, 2, ...); a
	// rejection names its line.
	Lines []int
	// Rejected are the lines the caller could not read: they are among
	// the rejections, and refuse a Whole intake.
	Rejected []LineError
	// Whole: any rejected payment refuses them all, and nothing starts.
	// Otherwise the good payments start and the bad are rejected.
	Whole bool
	// Project asks for where the started payments are projected to go
	// (Taken.Projection).
	Project bool
	// AllowDuplicate takes a file that holds the same payments as one its
	// tenant sent within the duplicate window; Override is then called,
	// before anything starts, to record that (an audit entry).
	AllowDuplicate bool
	Override       OverrideRecord
}

// OverrideRecord records, in tx, that a file matching dup, one sent
// before, is taken all the same, with its payments.
type OverrideRecord func(ctx context.Context, tx pgx.Tx, dup DuplicateFileError, payments int) error

// Taken is what Take did with an Intake.
type Taken struct {
	// BatchSubmission is what started: the batch of a file or a chunk,
	// or, from the API, the payments taken on their own (no BatchID).
	BatchSubmission
	// Started are the payments handed to be stored (their ids chosen
	// and rails routed), and Lines theirs; a conflict among them is
	// rejected.
	Started []Request
	Lines   []int
	// Rejections are the payments refused, by line, each line once: the
	// caller's unreadable lines, the invalid payments, those the controls
	// refuse and the id conflicts (Conflict).
	Rejections []LineError
	// Projection is where the started payments are projected to go, per
	// rail, as the rails' pacing windows stood before their Phase A
	// (nil: not asked, or none could be made).
	Projection []RailProjection
	// Duplicates are the started payments that look like an earlier
	// payment of their tenant (SuspectedDuplicates), by line: Phase A's
	// duplicate control does with each what its tenant's rule says.
	Duplicates []SuspectedDuplicate
}

// SuspectedDuplicate is a payment taken in that looks like an earlier
// one of its tenant: the same debtor account, creditor IBAN, amount,
// currency and date.
type SuspectedDuplicate struct {
	Line      int    `json:"line"`
	PaymentID string `json:"paymentId"`
	// Like is the tenant's id of the earlier payment.
	Like string `json:"like"`
	// Action is what Phase A will do with it: WARN, HOLD or REJECT.
	Action DuplicateAction `json:"action"`
}

// Refused is the rejections as an error (nil: none), naming the first
// line's fields: for a caller that takes nothing less than every payment.
func (t Taken) Refused() error {
	if len(t.Rejections) == 0 {
		return nil
	}
	le := t.Rejections[0]
	return fmt.Errorf("payment: %d payment(s) rejected, the first on line %d: %w", len(t.Rejections), le.Line, invalid(le.Fields...))
}

// ErrNotChecked: the payments could not be checked (the context ended,
// a route could not be read). Nothing was stored: sending them again is
// safe.
var ErrNotChecked = errors.New("payment: the payments could not be checked; nothing was stored")

// conflictDetail is an id conflict's rejection, whatever the way in.
const conflictDetail = "already used by this tenant for a different payment"

// Take is the one intake of payments, every way in calls it: it checks
// the payments (Validate, their route from in.Source; in a batch, an id
// each, once), drops the rejected ones (all of them when in.Whole), runs
// the controls on the rest, projects them when asked, stores them and
// starts their Phase A. A payment whose id its tenant used for a
// different payment is rejected (Conflict), and with in.Whole nothing is
// stored. A payment from the API without an id gets one.
//
// A file (routing.SourceFile) that holds the same payments as one its
// tenant sent within ServiceConfig.DuplicateFileWindow is refused, a
// *DuplicateFileError naming that file, unless in.AllowDuplicate; a file
// is remembered once accepted (a payment stored, no error).
//
// The error is ErrNotChecked when nothing was stored (nothing could be
// checked, or the duplicate check failed); otherwise a failure to store,
// after which the payments stored are accepted and sending them again is
// safe (their ids make it a replay).
func (s *Service) Take(ctx context.Context, in Intake) (Taken, error) {
	reqs, lines := in.Requests, in.Lines
	if lines == nil {
		lines = make([]int, len(reqs))
		for i := range lines {
			lines[i] = i + 1
		}
	}
	if in.Source == routing.SourceAPI {
		for i := range reqs {
			if reqs[i].PaymentID == "" {
				reqs[i].PaymentID = "pay-" + uuid.Must(uuid.NewV7()).String()
			}
		}
	}
	checked, err := s.CheckBatchFrom(ctx, in.Source, reqs, lines)
	if err != nil {
		return Taken{}, fmt.Errorf("%w: %w", ErrNotChecked, err)
	}
	var t Taken
	t.Rejections = mergeLines(append(slices.Clone(in.Rejected), checked...))
	t.Started, t.Lines = keepLines(reqs, lines, t.Rejections, in.Whole)
	refused, err := s.controls(ctx, in, t.Started, t.Lines)
	if err != nil {
		return Taken{}, fmt.Errorf("%w: %w", ErrNotChecked, err)
	}
	if len(refused) > 0 {
		t.Rejections = mergeLines(append(t.Rejections, refused...))
		t.Started, t.Lines = keepLines(t.Started, t.Lines, refused, in.Whole)
	}
	if len(t.Started) == 0 {
		return t, nil
	}
	var fingerprint string
	var tenants []string
	if in.Source == routing.SourceFile && s.cfg.DuplicateFileWindow > 0 {
		if fingerprint, err = fileFingerprint(t.Started); err != nil {
			return Taken{}, fmt.Errorf("%w: %w", ErrNotChecked, err)
		}
		tenants = tenantsOf(t.Started)
		release, err := s.holdFile(ctx, fingerprint)
		if err != nil {
			return Taken{}, fmt.Errorf("%w: %w", ErrNotChecked, err)
		}
		defer release()
		dup, err := s.sentBefore(ctx, fingerprint, tenants)
		switch {
		case err != nil:
			return Taken{}, fmt.Errorf("%w: %w", ErrNotChecked, err)
		case dup != nil && !in.AllowDuplicate:
			return Taken{}, dup
		case dup != nil:
			if err := s.recordOverride(ctx, in.Override, *dup, len(t.Started)); err != nil {
				return Taken{}, fmt.Errorf("%w: %w", ErrNotChecked, err)
			}
		}
	}
	if in.Project {
		// Before their Phase A takes any slot. A projection that cannot
		// be made refuses nothing.
		if t.Projection, err = s.Project(ctx, t.Started); err != nil {
			s.log().Warn("a projection could not be made; the payments are accepted without", "source", in.Source, "error", err)
			t.Projection = nil
		}
	}
	// Read-only and advisory: Phase A's control decides, so a failed
	// look refuses nothing.
	if sus, err := s.SuspectedDuplicates(ctx, t.Started); err != nil {
		s.log().Warn("the payments' suspected duplicates could not be looked for; Phase A still checks them", "source", in.Source, "error", err)
	} else {
		for _, d := range sus {
			t.Duplicates = append(t.Duplicates, SuspectedDuplicate{Line: t.Lines[d.Index], PaymentID: d.PaymentID, Like: d.Like, Action: d.Action})
		}
	}
	var conflicts []int
	if in.Source == routing.SourceAPI {
		conflicts, err = s.takeEach(ctx, t.Started)
		t.Payments = len(t.Started) - len(conflicts)
	} else {
		t.BatchSubmission, err = s.StartBatch(ctx, t.Started, in.Whole)
		conflicts = t.Conflicts
	}
	if fingerprint != "" && err == nil && t.Payments > 0 {
		// Only a file accepted: one refused, or not all stored, may be
		// sent again.
		if err := s.rememberFile(ctx, fingerprint, t.BatchID, tenants); err != nil {
			s.log().Error("an accepted file's fingerprint was not kept: the same file sent again is not refused", "batch", t.BatchID, "error", err)
		}
	}
	if len(conflicts) == 0 || err != nil && !errors.Is(err, ErrConflict) {
		return t, err
	}
	for _, i := range conflicts {
		t.Rejections = append(t.Rejections, LineError{Line: t.Lines[i], Conflict: true,
			Fields: []field.Error{{Field: "paymentId", Detail: conflictDetail}}})
	}
	t.Rejections = mergeLines(t.Rejections)
	if err != nil { // whole: nothing was stored
		t.Started, t.Lines = nil, nil
	}
	return t, nil
}

// controls are the intake's controls: they run on the payments checked
// and kept, before any is stored, knowing the way in (in.Source), the
// principal that sent them (the context's) and the whole of what came
// (a file's count and total). The approval rules set on each payment
// the approvals it needs, stored with its id's claim. They answer the
// payments they refuse, by line (none yet); a failure stores nothing.
func (s *Service) controls(ctx context.Context, in Intake, reqs []Request, _ []int) ([]LineError, error) {
	return nil, s.applyApprovalRules(ctx, in.Source, submitterOf(ctx), reqs)
}

// takeEach stores payments from the API each on its own, under its own
// Phase A workflow, and starts those new: a start that fails is made
// later by ResumeIntake. It answers the indexes of the id conflicts.
func (s *Service) takeEach(ctx context.Context, reqs []Request) ([]int, error) {
	receipts, err := s.cfg.Store.Receive(ctx, reqs, func(i int) string { return InitWorkflowID(Key(reqs[i].TenantID, reqs[i].PaymentID)) }, false)
	if err != nil {
		return nil, err
	}
	var conflicts []int
	for i, rc := range receipts {
		switch {
		case rc.Conflict:
			conflicts = append(conflicts, i)
		case rc.Fresh:
			if err := s.startOnce(ctx, InitWorkflowID(rc.Key)); err != nil {
				s.log().Warn("a payment is stored; its init workflow will be started by the intake's resume", "payment", rc.Key, "error", err)
			}
		}
	}
	return conflicts, nil
}

// keepLines is reqs (and their lines) less those on a rejected line;
// none when whole and any is rejected.
func keepLines(reqs []Request, lines []int, rejected []LineError, whole bool) ([]Request, []int) {
	if len(rejected) == 0 {
		return reqs, lines
	}
	if whole {
		return nil, nil
	}
	bad := make(map[int]bool, len(rejected))
	for _, le := range rejected {
		bad[le.Line] = true
	}
	var keep []Request
	var kept []int
	for i, r := range reqs {
		if !bad[lines[i]] {
			keep, kept = append(keep, r), append(kept, lines[i])
		}
	}
	return keep, kept
}

// mergeLines sorts line errors by line and folds those of one line.
func mergeLines(les []LineError) []LineError {
	sort.Slice(les, func(i, j int) bool { return les[i].Line < les[j].Line })
	var out []LineError
	for _, le := range les {
		if n := len(out); n > 0 && out[n-1].Line == le.Line {
			out[n-1].Fields = append(out[n-1].Fields, le.Fields...)
			out[n-1].Conflict = out[n-1].Conflict || le.Conflict
			continue
		}
		out = append(out, le)
	}
	return out
}
