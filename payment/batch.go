package payment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/queue"
)

// ChunkSize is how many payments of a bulk file one init workflow takes by
// default: a 500,000-payment file becomes 500 workflows, not 500,000.
const ChunkSize = 1000

// BatchWorkflowName is the chunk workflow's registered name.
const BatchWorkflowName = "PaymentBatchInitWorkflow"

// BatchResult is how a chunk's Phase A ended.
type BatchResult struct {
	Scheduled int
	Rejected  int
}

// PaymentBatchInitWorkflow is Phase A for a chunk of a bulk file: the same
// steps as PaymentInitWorkflow, each done for the whole chunk in one
// activity, so a chunk costs a handful of activities instead of thousands.
func PaymentBatchInitWorkflow(ctx workflow.Context, chunk []Request) (BatchResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, MaximumInterval: 30 * time.Second, MaximumAttempts: 10,
			NonRetryableErrorTypes: []string{"CONFLICT"},
		},
	})
	var a *InitActivities
	var res BatchResult
	err := workflow.ExecuteActivity(ctx, a.InitChunk, chunk, workflow.GetInfo(ctx).WorkflowExecution.ID).Get(ctx, &res)
	return res, err
}

// InitChunk validates, enriches and checks every payment of a chunk, records
// the refused ones REJECTED, and persists and enqueues the others, all in one
// transaction: a retry after a failure redoes the chunk from the start, and
// replays of payments already stored are no-ops.
func (a *InitActivities) InitChunk(ctx context.Context, chunk []Request, initWorkflowID string) (BatchResult, error) {
	var res BatchResult
	now := time.Now()
	if a.Now != nil {
		now = a.Now()
	}
	// Checks first, outside the transaction; then the chunk's slots in one
	// call to the limiter; then everything stored in one transaction.
	type checked struct {
		r     Request
		m     Money
		enr   Enrichment
		rules []string
		err   error
	}
	all := make([]checked, len(chunk))
	var accepted []Request
	for i, r := range chunk {
		c := checked{r: r}
		c.m, c.err = Validate(r, now)
		if c.err == nil {
			c.enr, c.err = a.Enrich(ctx, r)
		}
		if c.err == nil {
			c.rules, c.err = a.ApplyRules(ctx, r, c.m.Amount.String(), c.enr)
		}
		if c.err == nil {
			accepted = append(accepted, r)
		}
		all[i] = c
	}
	slots, err := a.execTimes(ctx, accepted)
	if err != nil {
		return res, err
	}
	err = pgx.BeginFunc(ctx, a.Store.db, func(tx pgx.Tx) error {
		store := NewStore(tx)
		for _, c := range all {
			r := c.r
			if c.err != nil {
				var money *Money
				if c.m.Amount.IsPositive() {
					money = &c.m
				}
				if _, rerr := store.Record(ctx, r, money, StatusRejected, reason(c.err), nil); rerr != nil {
					return rerr
				}
				res.Rejected++
				continue
			}
			slot := slots[r.PaymentID]
			at := slot.At
			if _, err := store.Record(ctx, r, &c.m, StatusScheduled, "", &at); err != nil {
				return err
			}
			pc, err := json.Marshal(Context{Version: 1, Request: r, Enrichment: c.enr, Amount: c.m.Amount.String(), Rules: c.rules})
			if err != nil {
				return err
			}
			if _, err := a.Queue.SaveContextAndEnqueueTx(ctx, tx, queue.EnqueueParams{
				ItemType: ItemType, ItemID: r.PaymentID, TenantID: r.TenantID, ScheduledExecTime: at,
				InitWorkflowID: initWorkflowID, Context: pc, Paced: slot.Paced,
			}); err != nil {
				return err
			}
			res.Scheduled++
		}
		return nil
	})
	if errors.Is(err, ErrConflict) || errors.Is(err, queue.ErrConflict) {
		return res, temporal.NewNonRetryableApplicationError(err.Error(), "CONFLICT", err)
	}
	return res, err
}

// reason is a refusal's message without the workflow error wrapping.
func reason(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return err.Error()
}

// SubmitBatch validates a bulk file's payments and starts one chunk
// workflow per ChunkSize payments. Any invalid payment refuses the whole
// file (a *ValidationError per line in LineErrors) and nothing starts. The
// batch id is derived from the payments, so submitting the same file again
// starts nothing new.
func (s *Service) SubmitBatch(ctx context.Context, reqs []Request) (BatchSubmission, error) {
	if lineErrs := s.CheckBatch(reqs, nil); len(lineErrs) > 0 {
		return BatchSubmission{}, &BatchError{Lines: lineErrs}
	}
	h := sha256.New()
	for _, r := range reqs {
		raw, err := canonical(r)
		if err != nil {
			return BatchSubmission{}, err
		}
		h.Write(raw)
	}
	sub := BatchSubmission{BatchID: "batch-" + hex.EncodeToString(h.Sum(nil))[:24], Payments: len(reqs)}
	size := s.ChunkSize
	if size <= 0 {
		size = ChunkSize
	}
	for start := 0; start < len(reqs); start += size {
		chunk := reqs[start:min(start+size, len(reqs))]
		id := fmt.Sprintf("init-%s-%d", sub.BatchID, start/size)
		if err := s.startOnce(ctx, id, BatchWorkflowName, chunk); err != nil {
			return sub, err
		}
		sub.Chunks++
	}
	return sub, nil
}

// CheckBatch validates a bulk file's payments; lines gives each payment's
// line number in the file (nil: 1, 2, ...). Every payment needs an id, and
// an id may appear once.
func (s *Service) CheckBatch(reqs []Request, lines []int) []LineError {
	var errs []LineError
	seen := make(map[string]int, len(reqs))
	for i, r := range reqs {
		line := i + 1
		if lines != nil {
			line = lines[i]
		}
		var fields []FieldError
		if r.PaymentID == "" {
			fields = append(fields, FieldError{Field: "paymentId", Detail: "required in a bulk file, so that a resubmitted file is recognized"})
		} else if prev, dup := seen[r.PaymentID]; dup {
			fields = append(fields, FieldError{Field: "paymentId", Detail: fmt.Sprintf("also on line %d", prev)})
		} else {
			seen[r.PaymentID] = line
		}
		if _, err := Validate(r, s.now()); err != nil {
			var ve *ValidationError
			if errors.As(err, &ve) {
				fields = append(fields, ve.Fields...)
			}
		}
		if len(fields) > 0 {
			errs = append(errs, LineError{Line: line, Fields: fields})
		}
	}
	return errs
}

// BatchSubmission is what SubmitBatch started.
type BatchSubmission struct {
	BatchID  string `json:"batchId"`
	Payments int    `json:"payments"`
	Chunks   int    `json:"chunks"`
}

// LineError is a bulk file's line and what is wrong with it.
type LineError struct {
	Line   int          `json:"line"`
	Fields []FieldError `json:"errors"`
}

// BatchError lists the bad lines of a refused bulk file.
type BatchError struct{ Lines []LineError }

func (e *BatchError) Error() string {
	return fmt.Sprintf("bulk file refused: %d bad line(s)", len(e.Lines))
}
