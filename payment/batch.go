package payment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"

	"go.temporal.io/sdk/workflow"
	"golang.org/x/sync/errgroup"
)

// ChunkSize is how many payments of a bulk file one init workflow takes by
// default: a 500,000-payment file becomes 500 workflows, not 500,000.
const ChunkSize = 1000

// BatchWorkflowName is the chunk workflow's registered name.
const BatchWorkflowName = "PaymentBatchInitWorkflow"

// PaymentBatchInitWorkflow is Phase A for a chunk of a bulk file given its
// requests, as files were taken in before their payments were stored on
// intake (PaymentInit now): kept for the runs started then.
func PaymentBatchInitWorkflow(ctx workflow.Context, chunk []Request) (BatchResult, error) {
	ctx = workflow.WithActivityOptions(ctx, initOptions)
	var a *InitActivities
	var res BatchResult
	err := workflow.ExecuteActivity(ctx, a.InitChunk, chunk, workflow.GetInfo(ctx).WorkflowExecution.ID).Get(ctx, &res)
	return res, err
}

// SubmitBatch validates a bulk file's payments and starts one chunk
// workflow per ChunkSize payments. Any invalid payment refuses the whole
// file (a *ValidationError per line in LineErrors) and nothing starts. The
// batch id is derived from the payments, so submitting the same file again
// starts nothing new.
func (s *Service) SubmitBatch(ctx context.Context, reqs []Request) (BatchSubmission, error) {
	lineErrs, err := s.CheckBatch(ctx, reqs, nil)
	if err != nil {
		return BatchSubmission{}, err
	}
	if len(lineErrs) > 0 {
		return BatchSubmission{}, &BatchError{Lines: lineErrs}
	}
	return s.StartBatch(ctx, reqs, true)
}

// StartBatch is SubmitBatch for payments CheckBatch has passed (the HTTP
// handler checks a file once, to start its good payments and list the
// bad): it stores the payments RECEIVED, records the file and starts one
// PaymentInit per chunk, given the chunk's keys, without checking again.
// A payment whose id its tenant used for a different payment is not
// stored; its index in reqs is in Conflicts, and with whole set, nothing
// is (the error is then ErrConflict). Phase A still validates each
// payment. The payments are accepted once stored: a chunk whose start
// fails is started later by ResumeIntake, and the error says the file can
// be sent again.
func (s *Service) StartBatch(ctx context.Context, reqs []Request, whole bool) (BatchSubmission, error) {
	h := sha256.New()
	for _, r := range reqs {
		raw, err := canonical(r)
		if err != nil {
			return BatchSubmission{}, err
		}
		h.Write(raw)
	}
	sub := BatchSubmission{BatchID: "batch-" + hex.EncodeToString(h.Sum(nil))[:24]}
	size := s.ChunkSize
	if size <= 0 {
		size = ChunkSize
	}
	chunkID := func(n int) string { return fmt.Sprintf("init-%s-%d", sub.BatchID, n) }
	receipts, err := s.Store.Receive(ctx, reqs, func(i int) string { return chunkID(i / size) }, whole)
	if errors.Is(err, ErrConflict) {
		for i, rc := range receipts {
			if rc.Conflict {
				sub.Conflicts = append(sub.Conflicts, i)
			}
		}
		return sub, fmt.Errorf("payment: batch %s: %w", sub.BatchID, err)
	}
	if err != nil {
		return sub, fmt.Errorf("payment: batch %s: %w", sub.BatchID, err)
	}
	var keys []string
	chunks := map[int][]string{}
	var order []int
	seen := map[string]bool{}
	var tenants []string
	for i, rc := range receipts {
		if rc.Conflict {
			sub.Conflicts = append(sub.Conflicts, i)
			continue
		}
		keys = append(keys, rc.Key)
		if _, ok := chunks[i/size]; !ok {
			order = append(order, i/size)
		}
		chunks[i/size] = append(chunks[i/size], rc.Key)
		if t := reqs[i].TenantID; !seen[t] {
			seen[t] = true
			tenants = append(tenants, t)
		}
	}
	sub.Payments = len(keys)
	if len(keys) == 0 {
		return sub, nil
	}
	// The file is recorded before its chunks start, so its progress can be
	// asked for at once.
	planned := BatchSubmission{BatchID: sub.BatchID, Payments: len(keys), Chunks: len(order)}
	if err := s.Store.RecordBatch(ctx, planned, tenants, keys); err != nil {
		return sub, fmt.Errorf("payment: record batch %s: %w", sub.BatchID, err)
	}
	var g errgroup.Group
	g.SetLimit(startConcurrency)
	var started atomic.Int64
	for _, n := range order {
		g.Go(func() error {
			if err := s.startOnce(ctx, chunkID(n), PhaseAWorkflowName, chunks[n]); err != nil {
				return err
			}
			started.Add(1)
			return nil
		})
	}
	err = g.Wait()
	sub.Chunks = int(started.Load())
	return sub, err
}

// startConcurrency bounds the chunk workflow starts in flight for one file.
const startConcurrency = 8

// CheckBatch validates a bulk file's payments; lines gives each payment's
// line number in the file (nil: 1, 2, ...). Every payment needs an id, and
// a tenant's id may appear once. It stops when ctx is done.
func (s *Service) CheckBatch(ctx context.Context, reqs []Request, lines []int) ([]LineError, error) {
	var errs []LineError
	seen := make(map[[2]string]int, len(reqs))
	for i, r := range reqs {
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, fmt.Errorf("payment: checking a file stopped at payment %d: %w", i, context.Cause(ctx))
		}
		line := i + 1
		if lines != nil {
			line = lines[i]
		}
		var fields []FieldError
		if r.PaymentID == "" {
			fields = append(fields, FieldError{Field: "paymentId", Detail: "required in a bulk file, so that a resubmitted file is recognized"})
		} else if prev, dup := seen[[2]string{r.TenantID, r.PaymentID}]; dup {
			fields = append(fields, FieldError{Field: "paymentId", Detail: fmt.Sprintf("also on line %d", prev)})
		} else {
			seen[[2]string{r.TenantID, r.PaymentID}] = line
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
	return errs, nil
}

// BatchSubmission is what SubmitBatch started.
type BatchSubmission struct {
	BatchID  string `json:"batchId"`
	Payments int    `json:"payments"`
	Chunks   int    `json:"chunks"`
	// Conflicts are the indexes of the payments not stored: their tenant
	// used their id for a different payment.
	Conflicts []int `json:"-"`
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
