// Package process is a generic process manager (a saga) on PostgreSQL and
// Temporal. A domain describes a process as steps, each a database effect
// done in a transaction the package gives it; the package runs the steps
// in order, retries the failures worth retrying, and when a step fails for
// good undoes the completed steps in reverse order. It knows process
// types, step names, error codes and each definition's data type as a
// type parameter — never payments.
//
// Why not plain Temporal activities: a step's effect, its record in the
// process log and the process's new state must commit together, or a
// crash between them leaves an effect without a record (done twice on
// retry) or a record without an effect. Temporal delivers an activity at
// least once; the inbox row makes the step happen once.
//
// # Model
//
// A Definition[D] (Type, Initial, Next, Steps, hooks) is registered in a
// Registry, which holds definitions of any data types side by side. Each
// Step has a Handler, the compensation step that undoes it (if any), the
// error codes worth retrying, MaxRetries and a Timeout. A handler's
// *Failure (Failf) is a business failure, retryable or not by its Code
// alone; any other error is an infrastructure failure. The process id is
// a UUID v5 of (type, business key), so a re-run of the caller finds the
// same process.
//
// # Data
//
// D is the process's data: a type that encodes to a JSON object,
// stored as JSON. A step decodes it into a D once (UseNumber: a number in
// an untyped field round-trips exactly; money is a decimal string all
// the same), gives the handler a *D to edit and Next the D it left, and
// encodes it once to store it whole: no merge, so a field a step sets to
// false or zero is set. The step's result, in its inbox row and log
// entry, is the top-level keys whose value changed (null: removed).
// Initial data (Start) must decode into a D with no key to spare; stored
// data keeps working across changes of D as long as its JSON names do
// (keys D lacks are dropped at the next step). Stored data D cannot read
// fails the step for good (a non-retryable activity error) and leaves the
// process where it was: compensating would undo it for the code's sake.
// Readers that do not know D (Get, List, operators, the HTTP view) get
// the JSON as stored (Instance.Data).
//
// # Tables (process/migrations, no foreign keys)
//
//   - process_instance: one row per process: status (CHECKed), current
//     step, data, retries of the current step, version (every update is
//     guarded by version and status), the status a paused process resumes
//     to, the failure (failed step, code, message), a failed
//     compensation's code and message, the workflow driving it. UNIQUE
//     (process_type, business_key), and no index on what an update
//     changes, so a step's updates are HOT (fill factor 70 leaves them
//     room on the page).
//   - process_attention: the operator listing (List): a row for each
//     process in a status an operator looks for (Status.Listed: FAILED,
//     COMPENSATING, COMPENSATED, PAUSED, COMPENSATION_FAILED), indexed
//     (status, updated_at, process_id), written by the update that moves
//     the process in or out of such a status. A process that goes NEW →
//     RUNNING → SUCCEEDED never touches it.
//   - process_log: append-only (a trigger refuses UPDATE, DELETE and
//     TRUNCATE; a DELETE only from the retention's transaction), ordered
//     by (process_id, seq), the primary key that the log read, the replay
//     and the compensation plan use.
//   - process_inbox: one row per applied step, keyed <processId>:<STEP> or
//     <processId>:COMPENSATE:<STEP>, with the step's result.
//
// Retention (DeleteEnded, run by package retention): a process that ended
// for good (SUCCEEDED, COMPENSATED) goes with its log, inbox and
// attention rows once old enough, in one statement; no other status is
// ever deleted (migration 00068).
//
// # The transaction per step
//
// Activities.Execute runs one step in one transaction: take the process's
// turn and its row lock (LockInstance); if the process is not at the
// requested step in a status that runs it, change nothing and answer
// where it is (with the stored result if the step's inbox row exists: a
// duplicate delivery); else decode the data, run the handler, decide the
// next step with the definition's Next, then write the inbox row with the
// step's result and the instance with its new data, with StepStarted and
// StepCompleted (and ProcessCompleted, or the next compensation) in one
// statement (an inbox row already there rolls the effect back and
// answers as a duplicate) — commit. A delivery repeated, or made from
// many goroutines at once, has one effect: the others wait for the turn
// and find the inbox row. A failed attempt is rolled back,
// effect and all; its StepStarted and StepFailed entries are written in a
// transaction of its own, unless the process changed in between (an
// operator came first: nothing happened, nothing is recorded).
//
// A step's transaction runs the package's own statements (LockInstance,
// UpdateInstance) on the plans PostgreSQL keeps for the
// connection (plan_cache_mode force_generic_plan, set with BEGIN by
// BeginGenericPlans, which a domain may use around its steps too): they
// find their rows by key on any plan. The handlers' statements run so
// only for a definition with GenericPlans, else they are planned for
// their values. Planning each statement was a fifth of PostgreSQL's CPU
// a payment. A domain vouches for its statements with
// explain.Options.Generic, which shows the kept plan (payment's
// TestExecutionPlans).
//
// The turn is a transaction-scoped advisory lock per process, taken with
// the row lock by every step and every operator action. PostgreSQL grants
// it in arrival order, which it does not promise for a row lock once the
// row is updated: without it, a runner asking for the next step could
// overtake an operator's pause that waited for the step in flight.
//
// # A group's step (AdvanceGroup)
//
// A forward step with a GroupHandler (Step.Group) can run for several
// processes of its definition in one transaction: their instances locked
// in one statement (in id order, the advisory turns with them), the
// handler called once for all inside a savepoint, then their transitions,
// log entries and inbox rows written in one statement (CompleteSteps),
// the hooks, commit. A process the handler answers an error for is taken
// out: the savepoint is rolled back and the handler called again without
// it, and it runs the step alone (Execute), where a business failure is
// recorded as above. A failure of the group's transaction moves none of
// them: each runs the step alone. So each process's effect still commits
// exactly with its inbox row, and its log reads as if it had run alone.
//
// # State machine
//
//	NEW ──first attempt──▶ RUNNING ──last step──▶ SUCCEEDED
//	RUNNING ──permanent failure, something to undo──▶ COMPENSATING ──all undone──▶ COMPENSATED
//	RUNNING ──permanent failure, nothing to undo──▶ FAILED
//	COMPENSATING ──compensation fails for good──▶ COMPENSATION_FAILED
//	NEW, RUNNING, COMPENSATING ──Pause──▶ PAUSED ──Resume──▶ the status it had
//	FAILED ──Retry──▶ RUNNING (at the failed step)
//	COMPENSATION_FAILED ──Retry──▶ COMPENSATING (at the failed compensation)
//	NEW, RUNNING, PAUSED, FAILED ──Compensate──▶ COMPENSATING, or COMPENSATED when nothing completed needs undoing
//
// A retryable code with retries left keeps the process at the step with
// retries+1; the runner backs off (workflow.Sleep, doubling) and tries
// again. A handler past its Timeout is a retryable TIMEOUT (StepTimedOut;
// a compensation's timeout is a CompensationFailed with code TIMEOUT).
// Compensation runs the compensation steps of the completed steps that
// have one, last completed first, each idempotent like a step; its
// retryable codes are retried too. The failure that started it stays on
// the instance (a payment shows INSUFFICIENT_FUNDS, not the compensation).
//
// # Events (process_log.event)
//
// ProcessStarted, StepStarted, StepCompleted, StepFailed, StepTimedOut,
// CompensationStarted, CompensationCompleted, CompensationFailed,
// ProcessCompleted, ProcessFailed, ProcessCompensating,
// ProcessCompensated, ProcessCompensationFailed, ProcessPaused,
// ProcessResumed, OperatorRetry, OperatorCompensate, RunnerAttached: see
// the Event constants. Every status change has its event, so Replay
// rebuilds status and current step from the log alone. The actor is the
// operator who asked, "system" otherwise.
//
// # Runner on Temporal
//
// Run drives a process inline in any workflow: Start (create, or find and
// attach to the process a previous run created), then Execute the current
// step until the status is final, every decision taken from an activity's
// result. With ExecOptions.Local the activities are local activities:
// a payment's whole process is one workflow task. Infrastructure errors
// are retried by the activity retry policy; when it gives up Run returns
// the error and the process waits at its step for the caller's next run.
// ProcessWorkflow drives a process by id (id process-<processId>-<n>): the
// runner operator actions start once the original caller has finished.
//
// Activities.Advance is Start and then Execute of each step while none has
// to wait (a backoff, a pause), in one call: a caller that runs it as one
// (local) activity records one event for a process that goes through,
// and leaves a process that must wait to Run.
//
// # Operator actions and running workflows
//
// Operator.Retry, Compensate, Pause, Resume: each takes the turn and the
// row lock, checks the status (else a *StatusError, ErrWrongStatus: 409),
// writes the instance guarded by its version and a log entry naming the
// actor, and runs a final status's hook, in one transaction. Pause needs
// no message: the runner's next Execute finds the process PAUSED and
// waits for WakeSignal, sent to the workflow recorded on the instance by
// Resume (or a forced compensation), with a look every ResumeCheck in
// case the signal is lost. Retry of a FAILED or COMPENSATION_FAILED
// process, whose runner has returned, records and starts a new
// ProcessWorkflow. Wake signals the recorded workflow and, if it is gone,
// starts a ProcessWorkflow (RunnerAttached). RetryTx, CompensateTx,
// PauseTx and ResumeTx take the action inside a caller's transaction (an
// admin change commits with its audit entry); their Action's Drive starts
// or wakes the runner once that has committed. The definition's OnSucceeded
// and OnFailed hooks run in the transaction of the final status change,
// whoever drove the process there, so a domain's own status stays
// consistent with the process's.
package process
