package demo

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/client"
	"github.com/paydispatch/paydispatch/payment"
)

// The controls the demo shows before money leaves (Options.Controls):
// acme's treasury rule asks one approval, by a principal other than the
// submitter, of a payment of treasuryMin or more sent alone; cobalt holds
// a suspected duplicate for an operator.
const (
	treasuryRule   = "treasury"
	treasuryMin    = "20000.00"
	treasuryAmount = "25000.00"
	treasuryID     = "demo-acme-treasury"
	againSuffix    = "-again"
)

// controlsRun is what the controls' steps saw.
type controlsRun struct {
	waited     string    // the treasury payment's reason while it waited
	ownRefusal string    // the problem type its submitter's approval got
	approvedAt time.Time // when the second principal approved it
	scheduled  int       // payments its approval scheduled
	againID    string    // a line of cobalt's file sent again alone, under a new id
	againOf    string    // that line's id
	againSaid  string    // the 202's duplicateOf
	againHow   string    // the 202's duplicateAction
	fileBatch  string    // cobalt's file's batch id
	fileAgain  int       // the status the same file sent again got
	fileSaid   string    // its problem's detail
}

// setUpControls sets acme's approval rule and cobalt's duplicate action,
// as an operator would over the API.
func setUpControls(ctx context.Context, admin *client.Client) error {
	rules := client.ApprovalRulesRequest{TenantId: "acme", Rules: []client.ApprovalRule{{Name: treasuryRule,
		MinAmount: client.NewOptString(treasuryMin), Source: client.NewOptApprovalRuleSource(client.ApprovalRuleSourceAPI), Approvals: 1}}}
	if err := client.Check(admin.PutApprovalRules(ctx, &rules, client.PutApprovalRulesParams{})); err != nil {
		return fmt.Errorf("acme's approval rules: %w", err)
	}
	settings := client.ControlSettingsRequest{TenantId: "cobalt",
		DuplicateAction: client.NewOptControlSettingsRequestDuplicateAction(client.ControlSettingsRequestDuplicateActionHOLD)}
	if err := client.Check(admin.SetControlSettings(ctx, &settings, client.SetControlSettingsParams{})); err != nil {
		return fmt.Errorf("cobalt's control settings: %w", err)
	}
	return nil
}

// approveBeforeTheInstant sends acme's treasury payment alone, due at the
// instant; waits until Phase A stops it AWAITING_APPROVAL; has its
// submitter try to approve it (refused: its own payment) and a second
// principal approve it, which paces it from its requested time: it
// executes at the instant, as if it had never waited.
func approveBeforeTheInstant(ctx context.Context, pool *pgxpool.Pool, submitter, approver *client.Client, instant time.Time) (*controlsRun, error) {
	req := paymentRequest(payment.Request{PaymentID: treasuryID, TenantID: "acme", DebtorAccount: mainAccount("acme"),
		Amount: treasuryAmount, Currency: "EUR", Creditor: payment.Creditor{Name: creditors[1], IBAN: ibans[0]},
		RequestedExecutionTime: instant, RemittanceInfo: "treasury transfer"})
	if err := client.Check(submitter.CreatePayment(ctx, &req, client.CreatePaymentParams{})); err != nil {
		return nil, fmt.Errorf("acme's treasury payment: %w", err)
	}
	run := &controlsRun{}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var status string
		err := pool.QueryRow(ctx, `SELECT status, coalesce(status_reason, '') FROM payments WHERE tenant_id = 'acme' AND external_id = $1`,
			treasuryID).Scan(&status, &run.waited)
		switch {
		case err == nil && status == string(payment.StatusAwaitingApproval):
		case err == nil || errors.Is(err, pgx.ErrNoRows):
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("acme's treasury payment is %q, not AWAITING_APPROVAL, 2 minutes after it was sent", status)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			continue
		default:
			return nil, err
		}
		break
	}
	decide := client.DecisionRequest{TenantId: client.NewOptString("acme"), PaymentIds: []string{treasuryID}}
	res, err := submitter.ApprovePayments(ctx, &decide, client.ApprovePaymentsParams{})
	if err != nil {
		return nil, fmt.Errorf("the submitter's approval: %w", err)
	}
	if p := client.ProblemOf(res); p != nil {
		run.ownRefusal = fmt.Sprintf("%d %s", p.Status, path.Base(p.Type.Path))
	}
	d, err := client.Result[*client.Decided](approver.ApprovePayments(ctx, &decide, client.ApprovePaymentsParams{}))
	if err != nil {
		return nil, fmt.Errorf("the second principal's approval: %w", err)
	}
	run.approvedAt, run.scheduled = time.Now(), d.Scheduled
	return run, nil
}

// sendAgain sends cobalt's file again whole (refused: the same file), and
// one of its lines again alone under a new id, once Phase A has taken
// the first (cobalt HOLDs a suspected duplicate).
func sendAgain(ctx context.Context, pool *pgxpool.Pool, cobalt *client.Client, file []payment.Request, batch string, run *controlsRun) error {
	run.fileBatch = batch
	body, err := jsonLines(file)
	if err != nil {
		return err
	}
	res, err := cobalt.CreatePaymentBatch(ctx, &client.CreatePaymentBatchReqApplicationXNdjson{Data: strings.NewReader(string(body))},
		client.CreatePaymentBatchParams{})
	if err != nil {
		return fmt.Errorf("cobalt's file again: %w", err)
	}
	if p := client.ProblemOf(res); p != nil {
		run.fileAgain, run.fileSaid = p.Status, p.Detail.Value
	} else {
		run.fileAgain = 202
	}
	var line payment.Request
	for _, r := range file {
		if r.DebtorAccount == mainAccount("cobalt") {
			line = r
			break
		}
	}
	if line.PaymentID == "" {
		return errors.New("cobalt's file has no payment of its main account to send again")
	}
	if err := waitPlaced(ctx, pool, "cobalt", []string{line.PaymentID}, 1); err != nil {
		return fmt.Errorf("cobalt's %s: %w", line.PaymentID, err)
	}
	run.againOf = line.PaymentID
	line.PaymentID += againSuffix
	run.againID = line.PaymentID
	req := paymentRequest(line)
	acc, err := client.Result[*client.PaymentAcceptedHeaders](cobalt.CreatePayment(ctx, &req, client.CreatePaymentParams{}))
	if err != nil {
		return fmt.Errorf("cobalt's %s again: %w", run.againOf, err)
	}
	run.againSaid, run.againHow = acc.Response.DuplicateOf.Value, string(acc.Response.DuplicateAction.Value)
	return nil
}

// controlsOutcome is how the controls' payments ended.
type controlsOutcome struct {
	run controlsRun
	// The treasury payment: its status, when it began, its approvals.
	treasury   string
	executedAt *time.Time
	approvals  int
	// The line sent again: its status and reason, whether it began.
	again, againReason string
	againBegan         bool
}

func collectControls(ctx context.Context, pool *pgxpool.Pool, run *controlsRun) (*controlsOutcome, error) {
	c := &controlsOutcome{run: *run}
	if err := pool.QueryRow(ctx, `SELECT p.status, p.accepted_at,
			(SELECT count(*) FROM payment_approvals a WHERE a.payment_id = p.payment_id AND a.decision = 'APPROVE')
		FROM payments p WHERE p.tenant_id = 'acme' AND p.external_id = $1`, treasuryID).Scan(&c.treasury, &c.executedAt, &c.approvals); err != nil {
		return nil, fmt.Errorf("acme's treasury payment: %w", err)
	}
	err := pool.QueryRow(ctx, `SELECT status, coalesce(status_reason, ''), accepted_at IS NOT NULL FROM payments
		WHERE tenant_id = 'cobalt' AND external_id = $1`, run.againID).Scan(&c.again, &c.againReason, &c.againBegan)
	if err != nil {
		return nil, fmt.Errorf("cobalt's %s: %w", run.againID, err)
	}
	return c, nil
}

// approvalLate is how long after the later of the instant and its
// approval the treasury payment may begin: the first slot of its rail.
const approvalLate = 3 * time.Second

// controlChecks: the treasury payment waited for a second principal (its
// submitter's own approval refused) and executed at its instant, or
// within a few seconds of a late approval; the same file sent again was
// refused naming the first; the line sent again under a new id was held
// as a suspected duplicate and never began.
func controlChecks(instant time.Time, c *controlsOutcome) []Check {
	r := c.run
	from := instant
	if r.approvedAt.After(from) {
		from = r.approvedAt
	}
	executed := c.executedAt != nil && !c.executedAt.Before(instant) && c.executedAt.Sub(from) <= approvalLate
	began := "never began"
	if c.executedAt != nil {
		began = fmt.Sprintf("began %s, %.1f s after the instant", clock(*c.executedAt), c.executedAt.Sub(instant).Seconds())
	}
	fourEyes := Check{Name: "four eyes: acme's treasury payment waited for a second principal, then executed at its instant",
		OK: strings.HasPrefix(r.waited, payment.ReasonApproval) && r.ownRefusal == "403 own-payment" && r.scheduled == 1 &&
			c.approvals == 1 && executed && (c.treasury == "DELIVERED" || c.treasury == "RETURNED"),
		Detail: fmt.Sprintf("%s %s waited (%s); its submitter's approval: %s; approved by another principal %.1f s before the instant (%d approval recorded); %s, %s",
			treasuryAmount, treasuryID, r.waited, orNone(r.ownRefusal), instant.Sub(r.approvedAt).Seconds(), c.approvals, began, c.treasury)}
	held := fmt.Sprintf("%s: like %s", payment.HoldDuplicate, r.againOf)
	again := Check{Name: "duplicates: cobalt's file sent again refused, a line of it sent again under a new id held, never sent",
		OK: r.fileAgain == 409 && strings.Contains(r.fileSaid, r.fileBatch) && r.fileBatch != "" &&
			r.againSaid == r.againOf && r.againHow == "HOLD" && c.again == string(payment.StatusHeld) && c.againReason == held && !c.againBegan,
		Detail: fmt.Sprintf("the file again: %d (%s); %s as %s: the 202 said like %s (%s), %s (%s), began: %t",
			r.fileAgain, orNone(r.fileSaid), r.againOf, r.againID, orNone(r.againSaid), orNone(r.againHow), c.again, c.againReason, c.againBegan)}
	return []Check{fourEyes, again}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
