package app

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/google/uuid"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/process"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
	"github.com/paydispatch/paydispatch/schema"
	"github.com/paydispatch/paydispatch/temporal"
)

// Migrate brings pool's database to paydispatch's current schema and
// registers the domains' item types in the dispatch queue (a type an
// operator has configured keeps its settings). A current database is left
// as it is.
func Migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) (postgres.Applied, error) {
	applied, err := postgres.Migrate(ctx, pool, schema.Schema(), logger)
	if err != nil {
		return applied, err
	}
	if err := payment.RegisterItemType(ctx, queue.New(pool)); err != nil {
		return applied, fmt.Errorf("register item types: %w", err)
	}
	return applied, nil
}

// Options are what the application's workers and dispatcher run with,
// passed to their constructors as River passes its Config to NewClient.
// The zero value is what serve and worker run: each field's zero is the
// product's default, and a benchmark sets the others to compare.
type Options struct {
	// WorkflowTaskSlots bounds the workflow tasks each payment worker runs
	// at once (0: DefaultWorkflowTaskSlots). A paced payment's workflow
	// task stays open while it waits for its slot (up to the paced lead),
	// so holds take rate × lead of the slots (100/s × 6 s = 600 of 1,000).
	WorkflowTaskSlots int
	// Pollers is how many pollers of workflow tasks and of activity tasks
	// the exec worker runs, each (0: the SDK's).
	Pollers int
	// NoEagerStart starts execution workflows the ordinary way, through
	// the matching service, not by eager start (see
	// dispatch.TemporalEngine).
	NoEagerStart bool
	// NoSettle leaves each queue item to the dispatcher's reconcile, not
	// settled in its execution's last step (see dispatch.Settler).
	NoSettle bool
	// NoGroupCommit runs each of a batch execution's payments on its own
	// transactions, as before group commit: the comparison.
	NoGroupCommit bool
	// Metrics is where the exec worker counts the executions it settles
	// (completed_total) and their lag behind their slots
	// (execution_lag_seconds), and the dispatcher its cycles; nil:
	// nowhere.
	Metrics *dispatch.Metrics
	// Controls are what Phase A checks the accepted payments with before
	// any takes a slot, in order (the screening hook: ScreeningControls).
	Controls []payment.Control
}

// DefaultWorkflowTaskSlots is the payment workers' workflow task slots.
const DefaultWorkflowTaskSlots = 1000

// execActivitySlots is the exec worker's activity slots.
const execActivitySlots = 200

// WorkerOptions are the exec worker's limits (its interceptors aside).
func (o Options) WorkerOptions() worker.Options {
	return worker.Options{
		MaxConcurrentWorkflowTaskExecutionSize: o.workflowTaskSlots(),
		MaxConcurrentActivityExecutionSize:     execActivitySlots,
		MaxConcurrentWorkflowTaskPollers:       o.Pollers,
		MaxConcurrentActivityTaskPollers:       o.Pollers,
	}
}

func (o Options) workflowTaskSlots() int {
	if o.WorkflowTaskSlots > 0 {
		return o.WorkflowTaskSlots
	}
	return DefaultWorkflowTaskSlots
}

// InitActivitySlots is how many Phase A activities a worker runs at once.
// They are CPU and PostgreSQL work on a chunk of up to thousands of
// payments, and a file's chunks are all started at once: one running a
// core keeps the cores busy. More only held more chunks in memory at once
// (every chunk of a file of 100,000 with 200 slots, 115 MiB of live heap
// at its peak), and on 2 cores four at once took a file of 500,000 in no
// sooner than two, with more CPU (their COPYs and slot inserts into the
// same index pages).
func InitActivitySlots() int {
	return max(2, runtime.GOMAXPROCS(0))
}

// initWorkerOptions are Phase A's worker limits.
func (o Options) initWorkerOptions() worker.Options {
	return worker.Options{
		MaxConcurrentWorkflowTaskExecutionSize: o.workflowTaskSlots(),
		MaxConcurrentActivityExecutionSize:     InitActivitySlots(),
	}
}

// StartInitWorker runs Phase A (PaymentPhaseA) on its task queue, and
// starts again, every IntakeResumeInterval, the Phase A of payments left
// RECEIVED that long (payment.Service.ResumeIntake), every
// LeversInterval, the levers' follow-ups (payment.Service.RunLevers), and,
// every ApprovalCutoffInterval, the cut-off of payments awaiting approval.
// Phase A runs the approval rules' control. The returned func stops it.
func StartInitWorker(store *postgres.DB, tc *temporal.Conn, log *slog.Logger, opts Options) (func(), error) {
	w := worker.New(tc.Client, payment.InitTaskQueue, opts.initWorkerOptions())
	payments := payment.NewStore(store.Pool)
	payment.RegisterInit(w, payment.NewInitActivities(payment.InitConfig{
		Store: payments, Queue: queue.New(store.Pool), Pacer: pacing.New(pacing.Config{Pool: store.Pool}), Log: log,
		Rails: Rails(store),
		// Each control sees every accepted payment; the most severe
		// decision wins (payment.Control).
		Controls: append([]payment.Control{payment.NewDuplicateControl(payment.DuplicateConfig{Store: payments}), payment.NewApprovalControl(payments)},
			opts.Controls...),
	}))
	if err := w.Start(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	svc := PaymentService(store, tc, payment.ServiceConfig{Log: log})
	levers, approvals := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); svc.RunIntakeResume(ctx, IntakeResumeInterval) }()
	go func() { defer close(levers); svc.RunLevers(ctx, LeversInterval) }()
	go func() { defer close(approvals); svc.RunApprovalCutoffs(ctx, ApprovalCutoffInterval) }()
	log.Info("payment init worker started", "task_queue", payment.InitTaskQueue)
	return func() { cancel(); <-done; <-levers; <-approvals; w.Stop() }, nil
}

// ApprovalCutoffInterval is how often the init worker applies their
// tenants' cut-off rules to the payments still awaiting approval at
// their rail's cut-off (payment.Service.RunApprovalCutoffs; one worker
// at a time sweeps).
const ApprovalCutoffInterval = time.Second

// LeversInterval is how often the init worker puts in order the rails
// whose waiting payments a higher priority joined, and settles payments
// resumed while their executions held them (payment.Service.RunLevers).
const LeversInterval = 250 * time.Millisecond

// IntakeResumeInterval is how long a payment may stay RECEIVED before its
// Phase A workflow is started again, and how often that is looked for.
const IntakeResumeInterval = time.Minute

// Processes are the process definitions paydispatch runs: SubmitPayment.
func Processes() *process.Registry {
	reg, err := process.NewRegistry(payment.SubmitPayment(payment.SubmitConfig{}))
	if err != nil {
		panic(err) // the definitions are this program's own
	}
	return reg
}

// ProcessOperator takes operators' actions on processes (retry,
// compensate, pause, resume); the runners it starts run on the exec
// worker's task queue.
func ProcessOperator(store *postgres.DB, tc *temporal.Conn) *process.Operator {
	return process.NewOperator(process.OperatorConfig{DB: store.Pool, Registry: Processes(), Client: tc.Client, TaskQueue: payment.ExecTaskQueue})
}

// ProcessAPI is what the process endpoints call: reads on the database,
// actions through the operator.
type ProcessAPI struct {
	*process.Operator
	DB process.DB
}

// Get reads a process.
func (p ProcessAPI) Get(ctx context.Context, id uuid.UUID) (process.Instance, error) {
	return process.Get(ctx, p.DB, id)
}

// Log reads a process's log.
func (p ProcessAPI) Log(ctx context.Context, id uuid.UUID) ([]process.LogEntry, error) {
	return process.Log(ctx, p.DB, id)
}

// StartExecWorker runs Phase B's business logic (PaymentExecution and
// the SubmitPayment process it runs), and PAYMENT's batch executions
// (exec_mode BATCH). The returned func stops it.
func StartExecWorker(store *postgres.DB, tc *temporal.Conn, log *slog.Logger, opts Options) (func(), error) {
	metrics := opts.Metrics
	wopts := opts.WorkerOptions()
	if !opts.NoSettle {
		// The queue item is settled by the execution's last step, not a
		// dispatcher cycle later (the reconcile remains the safety net).
		wopts.Interceptors = []interceptor.WorkerInterceptor{dispatch.NewSettler(queue.New(store.Pool), metrics,
			dispatch.SettledWorkflow{ItemType: payment.ItemType, WorkflowType: payment.ExecWorkflowName})}
	}
	w := worker.New(tc.Client, payment.ExecTaskQueue, wopts)
	lim := pacing.New(pacing.Config{Pool: store.Pool})
	acts := payment.NewExecActivities(payment.ExecConfig{Store: payment.NewStore(store.Pool), Slots: lim, Metrics: metrics,
		Tracer: TracerOf(tc.TracerProvider, "payment"), Rails: Rails(store), Pacer: lim, Queue: queue.New(store.Pool),
		Process: process.NewActivities(process.ActivitiesConfig{DB: store.Pool, Registry: Processes()})})
	payment.RegisterExec(w, acts)
	// PAYMENT's exec_mode BATCH: batch executions on the same worker.
	bcfg := dispatch.BatchConfig{
		Queue: queue.New(store.Pool), Engine: dispatch.TemporalEngine{Client: tc.Client, Namespace: tc.Namespace},
		Executors: map[string]dispatch.Executor{payment.ItemType: payment.BatchExecutor(acts)},
		// a group's payments commit together
		GroupExecutors: map[string]dispatch.GroupExecutor{payment.ItemType: payment.GroupExecutor(acts)},
		Metrics:        metrics, Logger: log.With("component", "batch-execution"),
	}
	if opts.NoGroupCommit {
		bcfg.GroupExecutors = nil
	}
	runner, err := dispatch.NewBatchRunner(bcfg)
	if err != nil {
		return nil, err
	}
	dispatch.RegisterBatch(w, runner)
	if err := w.Start(); err != nil {
		return nil, err
	}
	log.Info("payment exec worker started", "task_queue", payment.ExecTaskQueue)
	return w.Stop, nil
}

// PaymentService is the intake the HTTP API calls: it routes each
// payment to its rail and projects where a file goes. The store, queue,
// Temporal client, rails and pacer cfg leaves nil are serve's.
func PaymentService(store *postgres.DB, tc *temporal.Conn, cfg payment.ServiceConfig) *payment.Service {
	if cfg.Store == nil {
		cfg.Store = payment.NewStore(store.Pool)
	}
	if cfg.Queue == nil {
		cfg.Queue = queue.New(store.Pool)
	}
	if cfg.Temporal == nil {
		cfg.Temporal = tc.Client
	}
	if cfg.Rails == nil {
		cfg.Rails = Rails(store)
	}
	if cfg.Pacer == nil {
		cfg.Pacer = pacing.New(pacing.Config{Pool: store.Pool})
	}
	return payment.NewService(cfg)
}

// Rails are the rails, routing rules and cut-off rules, read through a
// snapshot every few seconds (routing.Resolver).
func Rails(store *postgres.DB) *routing.Resolver {
	return routing.NewResolver(store.Pool, routing.ResolverConfig{})
}

// StartDispatcher triggers dispatch cycles for every configured item type:
// in schedule mode ("schedule") a dispatch worker runs the cycles a
// Temporal Schedule per type fires; in lease mode ("lease") the cycles run
// in-process, under a PostgreSQL lease. The returned func stops it.
func StartDispatcher(ctx context.Context, mode string, store *postgres.DB, tc *temporal.Conn, log *slog.Logger, opts Options) (func(), error) {
	q := queue.New(store.Pool)
	schedules := dispatch.NewSchedules(tc.Client)
	cfg := dispatch.Config{
		Queue:   q,
		Engine:  dispatch.TemporalEngine{Client: tc.Client, Namespace: tc.Namespace, EagerStart: !opts.NoEagerStart},
		Logger:  log.With("component", "dispatcher"),
		Metrics: opts.Metrics,
		Feeders: map[string]dispatch.Feeder{payment.ItemType: payment.NewFeeder(store.Pool, q)},
	}
	configs, err := q.ListConfigs(ctx)
	if err != nil {
		return nil, err
	}
	if mode == "lease" {
		var types []string
		for _, c := range configs {
			if err := schedules.Remove(ctx, c.ItemType); err != nil {
				return nil, err
			}
			types = append(types, c.ItemType)
		}
		acts, err := dispatch.NewActivities(cfg)
		if err != nil {
			return nil, err
		}
		r, err := dispatch.NewLeaseRunner(dispatch.LeaseConfig{DB: store.Pool, Acts: acts, ItemTypes: types, Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
		runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Run(runCtx) }()
		log.Info("dispatching in lease mode", "item_types", types)
		return func() { cancel(); wg.Wait() }, nil
	}

	cfg.Schedules = schedules
	acts, err := dispatch.NewActivities(cfg)
	if err != nil {
		return nil, err
	}
	// The dispatch worker: 5 workflow tasks, 10 activities at a time.
	w := worker.New(tc.Client, dispatch.TaskQueue, worker.Options{
		MaxConcurrentWorkflowTaskExecutionSize: 5,
		MaxConcurrentActivityExecutionSize:     10,
	})
	dispatch.Register(w, acts)
	if err := w.Start(); err != nil {
		return nil, err
	}
	for _, c := range configs {
		if err := ensureWithRetry(ctx, schedules, c.ItemType, c.DispatchInterval); err != nil {
			w.Stop()
			return nil, err
		}
		log.Info("dispatch schedule ensured", "item_type", c.ItemType, "every", c.DispatchInterval, "enabled", c.Enabled)
	}
	return w.Stop, nil
}

// ensureWithRetry retries schedule creation for a while: a Temporal cluster
// that has just started (or restarted) can refuse it until all its services
// have joined.
func ensureWithRetry(ctx context.Context, s *dispatch.Schedules, itemType string, every time.Duration) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := s.Ensure(ctx, itemType, every)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}
