package payment_test

import (
	"log/slog"
	"os"
	"reflect"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/process"
)

// TestWorkflowsReplayRecordedHistories: histories of the workflows that
// run today replay on this code, so a change made without
// workflow.GetVersion (or a new workflow type) cannot strand the open
// ones. Each was recorded on Temporal's own server and PostgreSQL, the
// workers wired as serve wires them, from the code before typed process
// data (commit 6f6d906), one payment each:
//
//	phasea-v2-scheduled               PaymentPhaseA: a payment scheduled
//	phasea-v2-rejected                PaymentPhaseA: one rejected (no such debtor account)
//	execution-batch-v2                BatchExecution (exec_mode BATCH): executed, PROCESSING
//	execution-batch-v2-compensated    BatchExecution: SubmitPayment failed at BookLimits
//	                                  (LIMIT_EXCEEDED) and was compensated, FAILED
//	execution-batch-v2-handedover     BatchExecution: the payment's process was paused, so
//	                                  it was handed to its own PaymentExecution
//	execution-v2                      PaymentExecution (exec_mode PER_ITEM): executed in
//	                                  Execution, then settled (the Settler's marker)
//	execution-v2-compensated          PaymentExecution: LIMIT_EXCEEDED, compensated, FAILED
//	execution-v2-handedover-paused    PaymentExecution the batch handed over: Execution left
//	                                  the paused process to process.Run, which waited (timer),
//	                                  was woken by the resume signal and ran the steps,
//	                                  then Finish
//	execution-v2-paused-compensated   PaymentExecution in process.Run after a pause: BookLimits
//	                                  failed, ReverseTransaction ran, no Finish
//	process-v2-runner                 ProcessWorkflow, the runner an operator's action starts
//
// A PaymentExecution's context is the stored one's version alone, as the
// queue carries it; the paused processes were paused by an operator
// (process.Operator) before their execution, and resumed while it waited.
// The histories hold no creditor's name or IBAN.
//
// The workflows are registered as the workers register them: the exec
// worker's with the Settler interceptor (it adds the Settle local activity
// to PaymentExecution's history).
func TestWorkflowsReplayRecordedHistories(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		file     string
		replayer func(t *testing.T) worker.WorkflowReplayer
	}{
		{"testdata/phasea-v2-scheduled.json", initReplayer},
		{"testdata/phasea-v2-rejected.json", initReplayer},
		{"testdata/execution-batch-v2.json", execReplayer},
		{"testdata/execution-batch-v2-compensated.json", execReplayer},
		{"testdata/execution-batch-v2-handedover.json", execReplayer},
		{"testdata/execution-v2.json", execReplayer},
		{"testdata/execution-v2-compensated.json", execReplayer},
		{"testdata/execution-v2-handedover-paused.json", execReplayer},
		{"testdata/execution-v2-paused-compensated.json", execReplayer},
		{"testdata/process-v2-runner.json", execReplayer},
	} {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			r := tt.replayer(t)
			if err := r.ReplayWorkflowHistoryFromJSONFile(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)), tt.file); err != nil {
				t.Fatal(err)
			}
			// The replay ended as the run did (completed: checked by the
			// replayer), and with the same result.
			want := recordedResult(t, tt.file)
			var got any
			if want != nil {
				// The SDK's replayer keeps the result of the run it replayed
				// (under its own id), though its interface does not say so.
				res, ok := r.(interface{ GetWorkflowResult(string, any) error })
				if !ok {
					t.Fatalf("the replayer %T keeps no result", r)
				}
				if err := res.GetWorkflowResult("", &got); err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("the replay returned %v, the run %v", got, want)
			}
		})
	}
}

// recordedResult is the result a recorded run completed with, decoded
// as JSON (nil: none).
func recordedResult(t *testing.T, file string) any {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := h.GetEvents()[len(h.GetEvents())-1].GetWorkflowExecutionCompletedEventAttributes()
	if done == nil {
		t.Fatalf("%s: the run did not complete", file)
	}
	if len(done.GetResult().GetPayloads()) == 0 {
		return nil
	}
	var v any
	if err := converter.GetDefaultDataConverter().FromPayloads(done.GetResult(), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// initReplayer has the Phase A worker's workflows (app.StartInitWorker).
func initReplayer(t *testing.T) worker.WorkflowReplayer {
	r := newReplayer(t, worker.WorkflowReplayerOptions{})
	payment.RegisterInit(registry{WorkflowReplayer: r}, payment.NewInitActivities(payment.InitConfig{}))
	return r
}

// execReplayer has the exec worker's workflows and interceptor
// (app.StartExecWorker): PaymentExecution, ProcessWorkflow,
// BatchExecution, and the Settler on PaymentExecution.
func execReplayer(t *testing.T) worker.WorkflowReplayer {
	r := newReplayer(t, worker.WorkflowReplayerOptions{Interceptors: []interceptor.WorkerInterceptor{
		dispatch.NewSettler(nil, nil, dispatch.SettledWorkflow{ItemType: payment.ItemType, WorkflowType: payment.ExecWorkflowName}),
	}})
	payment.RegisterExec(registry{WorkflowReplayer: r}, payment.NewExecActivities(payment.ExecConfig{Process: process.NewActivities(process.ActivitiesConfig{})}))
	dispatch.RegisterBatch(registry{WorkflowReplayer: r}, &dispatch.BatchRunner{})
	return r
}

// newReplayer: without the deadlock detector, which measures wall time
// (1 s) and a loaded 2-core machine can exceed; what is tested is the
// commands' agreement with the history.
func newReplayer(t *testing.T, opts worker.WorkflowReplayerOptions) worker.WorkflowReplayer {
	t.Helper()
	opts.DisableDeadlockDetection = true
	r, err := worker.NewWorkflowReplayerWithOptions(opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// registry lets the workers' own Register functions register their
// workflows on a replayer; activities are not replayed, so they are
// dropped (nothing registers a Nexus service: its registry is nil).
type registry struct {
	worker.WorkflowReplayer
	worker.NexusServiceRegistry
}

var _ worker.Registry = registry{}

func (registry) RegisterActivity(any)                                         {}
func (registry) RegisterActivityWithOptions(any, activity.RegisterOptions)    {}
func (registry) RegisterDynamicActivity(any, activity.DynamicRegisterOptions) {}
