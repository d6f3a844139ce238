package payment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/txdetail"
	"github.com/paydispatch/paydispatch/process"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// ServiceConfig configures a Service. Zero fields take their defaults.
type ServiceConfig struct {
	// Store is the payments' tables (required but for CheckBatch).
	Store *Store
	// Queue is the dispatch queue, for the calls that change a payment's
	// queue row (cancel, priority, held payments).
	Queue *queue.Queue
	// Temporal starts the intake's workflows; nil: the calls that start
	// one fail, the others work.
	Temporal client.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
	// ChunkSize is the payments per chunk workflow of a bulk file (0 or
	// less: ChunkSize).
	ChunkSize int
	// Log; nil logs through slog's default.
	Log *slog.Logger
	// Metrics counts cancels; nil counts nothing.
	Metrics *Metrics
	// Rails routes each payment to its rail at intake (routing.Resolver):
	// one the rules do not route is refused, naming rail. Nil: none is
	// routed here (Phase A routes what it finds unrouted).
	Rails Rails
	// Pacer projects where a file's payments will go (Project) and
	// releases held ones; nil: neither.
	Pacer Pacer
	// CutoffGuard is as InitActivities' (0 or less: DefaultCutoffGuard).
	CutoffGuard time.Duration
	// DuplicateFileWindow is how long a tenant's accepted bulk file is
	// remembered: one with the same payments within it is refused
	// (DuplicateFileError) unless Intake.AllowDuplicate. 0: never.
	DuplicateFileWindow time.Duration
}

// Service is the payments intake: what the HTTP API (or any other intake)
// calls. Its zero value checks files (CheckBatch) and nothing else.
type Service struct {
	cfg ServiceConfig

	// sweep is where the approval cut-off sweep goes on from: past the
	// payments its last round looked at, so that more than a round's
	// worth waiting (rolled ones among them) are each looked at in turn.
	sweep struct {
		sync.Mutex
		at    time.Time
		id    string
		batch int // 0: approvalSweepBatch
	}
}

// NewService returns the intake configured by cfg. Nothing in cfg can be
// invalid: zero fields take their defaults or turn their part off, and a
// missing Store fails at the first call that needs it.
func NewService(cfg ServiceConfig) *Service { return &Service{cfg: cfg} }

// Store is the payments' store the service was built with.
func (s *Service) Store() *Store { return s.cfg.Store }

// Queue is the dispatch queue the service was built with.
func (s *Service) Queue() *queue.Queue { return s.cfg.Queue }

// Temporal is the client the service starts workflows with; nil if none.
func (s *Service) Temporal() client.Client { return s.cfg.Temporal }

// Rails is the intake's router; nil if none.
func (s *Service) Rails() Rails { return s.cfg.Rails }

// StatusReceived: the payment is taken in (its id claimed, its request in
// its Phase A workflow's intake row); Phase A has not stored it yet.
const StatusReceived Status = "RECEIVED"

// View is a payment's status as the API reports it.
type View struct {
	PaymentID              string     `json:"paymentId"`
	TenantID               string     `json:"tenantId,omitempty"`
	Status                 Status     `json:"status"`
	StatusReason           string     `json:"statusReason,omitempty"`
	QueueStatus            string     `json:"queueStatus,omitempty"`
	Amount                 string     `json:"amount,omitempty"`
	Currency               string     `json:"currency,omitempty"`
	RequestedExecutionTime *time.Time `json:"requestedExecutionTime,omitempty"`
	ScheduledExecutionTime *time.Time `json:"scheduledExecutionTime,omitempty"`
	CreatedAt              *time.Time `json:"createdAt,omitempty"`
	UpdatedAt              *time.Time `json:"updatedAt,omitempty"`
	// ExecutionRef is the execution that took the payment on: its
	// workflow's id and run, where an operator finds it in Temporal.
	ExecutionRef string `json:"executionRef,omitempty"`
	// Process is the payment's execution (SubmitPayment), once it began:
	// GET /v1/processes/{processId} shows its whole log.
	Process *ProcessView `json:"process,omitempty"`
	// Rail is the rail it leaves by (named, or routed at intake) and
	// ExecutionDate its business day there, YYYY-MM-DD, once Phase A
	// decided it; both empty for a payment from before rails.
	Rail          string `json:"rail,omitempty"`
	ExecutionDate string `json:"executionDate,omitempty"`
	// Priority orders it among the payments waiting with it.
	Priority Priority `json:"priority,omitempty"`
	// Details are the request's (package txdetail); a page of the list
	// leaves them out.
	txdetail.Details
}

// ProcessView is where a payment's execution stands.
type ProcessView struct {
	ProcessID   string         `json:"processId"`
	Status      process.Status `json:"status"`
	CurrentStep string         `json:"currentStep"`
	ErrorCode   string         `json:"errorCode,omitempty"`
}

// route sets the rail a valid payment leaves by: the one it names, if
// active, or the routing rules' choice (routed). A payment no rail takes
// is a *field.Invalid on rail.
func (s *Service) route(ctx context.Context, r *Request, m Money, source string) error {
	if s.cfg.Rails == nil {
		return nil
	}
	rail, err := s.cfg.Rails.Route(ctx, routing.Payment{TenantID: r.TenantID, Currency: r.Currency, Amount: m.Amount, Source: source, Rail: r.Rail})
	var bad *field.Invalid
	switch {
	case errors.As(err, &bad):
		return invalid(bad.Fields...)
	case errors.Is(err, routing.ErrNoRoute):
		return invalid(field.Error{Field: "rail", Detail: "no rail takes this payment: name one, or ask an operator for a routing rule"})
	case err != nil:
		return fmt.Errorf("payment %s: route: %w", r.PaymentID, err)
	}
	if rail.Type == routing.TypePACS008 && r.Creditor.BIC == "" {
		// pacs.008 names the creditor's agent: without it the relayer
		// would refuse the instruction after the debit.
		return invalid(field.Error{Field: "creditor.bic", Detail: fmt.Sprintf("required on rail %s (pacs.008)", rail.Name)})
	}
	if r.Rail == "" {
		r.Rail, r.routed = rail.Name, true
	}
	return nil
}

// ResumeIntake starts again the init workflows of payments that have been
// RECEIVED for longer than wait (their start failed, or the workflow did),
// at most max of them; a workflow still running is left as it is. It
// answers how many it started.
func (s *Service) ResumeIntake(ctx context.Context, wait time.Duration, max int) (int, error) {
	pending, err := s.cfg.Store.Pending(ctx, s.now().Add(-wait), max)
	if err != nil {
		return 0, err
	}
	started := 0
	for _, p := range pending {
		_, err := s.start(ctx, p.InitWorkflowID)
		var already *serviceerror.WorkflowExecutionAlreadyStarted
		switch {
		case errors.As(err, &already):
		case err != nil:
			return started, fmt.Errorf("payment: resume %s: %w", p.InitWorkflowID, err)
		default:
			started++
			s.log().Info("resumed the intake of payments left RECEIVED", "workflow", p.InitWorkflowID, "payments", p.Payments)
		}
	}
	return started, nil
}

// RunIntakeResume calls ResumeIntake every interval until ctx is done.
func (s *Service) RunIntakeResume(ctx context.Context, interval time.Duration) {
	s.every(ctx, interval, func() {
		if _, err := s.ResumeIntake(ctx, interval, 100); err != nil && ctx.Err() == nil {
			s.log().Warn("resuming the intake failed; trying again", "error", err, "in", interval)
		}
	})
}

// every calls round every interval until ctx is done: a follow-up's loop
// (its failures are logged, and the next round tries again).
func (s *Service) every(ctx context.Context, interval time.Duration, round func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			round()
		}
	}
}

func (s *Service) log() *slog.Logger {
	if s.cfg.Log != nil {
		return s.cfg.Log
	}
	return slog.Default()
}

// start starts a Phase A workflow (PaymentPhaseA) under a deterministic
// id, the id of its intake row.
func (s *Service) start(ctx context.Context, id string) (client.WorkflowRun, error) {
	opts := client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                InitTaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// Phase A is seconds of work; one that cannot finish in a day is stuck.
		WorkflowExecutionTimeout:                 24 * time.Hour,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}
	return s.cfg.Temporal.ExecuteWorkflow(ctx, opts, PhaseAWorkflowName)
}

// startOnce starts a Phase A workflow; one already started is fine.
func (s *Service) startOnce(ctx context.Context, id string) error {
	_, err := s.start(ctx, id)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &already) {
		return fmt.Errorf("payment: start %s: %w", id, err)
	}
	return nil
}

// ErrAmbiguous: an operator named a payment id that several tenants use,
// and no tenant.
var ErrAmbiguous = errors.New("payment: the id is used by several tenants; name the tenant")

// Status reports the tenant's payment with the id it chose: its business
// and queue status. An empty tenant (an operator's call) finds the id in
// any tenant: ErrAmbiguous when more than one uses it.
func (s *Service) Status(ctx context.Context, tenantID, id string) (View, error) {
	p, err := s.find(ctx, tenantID, id)
	if err != nil {
		return View{}, err
	}
	v := View{
		PaymentID: id, TenantID: p.TenantID, Status: p.Status, StatusReason: p.StatusReason,
		RequestedExecutionTime: &p.RequestedExecutionTime, ScheduledExecutionTime: p.ScheduledExecutionTime,
		CreatedAt: &p.CreatedAt, UpdatedAt: &p.UpdatedAt, ExecutionRef: p.ExecutionRef,
		Rail: p.Rail, ExecutionDate: executionDate(p.ExecutionDate), Priority: p.Priority.orDefault(),
		Details: p.Details,
	}
	if p.Money != nil {
		v.Amount, v.Currency = displayAmount(p.Money), p.Money.Currency
	}
	switch inst, err := process.Get(ctx, s.cfg.Store.db, process.ID(SubmitPaymentType, p.Key)); {
	case err == nil:
		v.Process = &ProcessView{ProcessID: inst.ID.String(), Status: inst.Status, CurrentStep: inst.Step, ErrorCode: inst.ErrorCode}
	case !errors.Is(err, process.ErrNotFound):
		return View{}, err
	}
	if it, err := s.cfg.Queue.Get(ctx, ItemType, p.Key); err == nil {
		v.QueueStatus = string(it.Status)
	} else if !errors.Is(err, queue.ErrNotFound) {
		return View{}, err
	}
	return v, nil
}

// find is the tenant's payment with the id, or, for no tenant, the only
// tenant's that has one.
func (s *Service) find(ctx context.Context, tenantID, id string) (Payment, error) {
	if tenantID != "" {
		return s.cfg.Store.Find(ctx, tenantID, id)
	}
	all, err := s.cfg.Store.FindAll(ctx, id)
	switch {
	case err != nil:
		return Payment{}, err
	case len(all) == 0:
		return Payment{}, fmt.Errorf("payment %s: %w", id, ErrNotFound)
	case len(all) > 1:
		return Payment{}, fmt.Errorf("payment %s: %w", id, ErrAmbiguous)
	}
	return all[0], nil
}

func (s *Service) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}

// displayAmount shows at least two decimals, more only when they are not
// zero: 125 → "125.00", 1.2345 → "1.2345".
func displayAmount(m *Money) string {
	if m.Amount.Equal(m.Amount.Round(2)) {
		return m.Amount.StringFixed(2)
	}
	return m.Amount.String()
}

// executionDate writes a payment's execution date as the API shows it
// ("" for none).
func executionDate(d time.Time) string {
	if d.IsZero() {
		return ""
	}
	return d.Format(time.DateOnly)
}
