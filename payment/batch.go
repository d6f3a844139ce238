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

// PaymentBatchInitWorkflow is Phase A for a chunk of a bulk file: the code
// PaymentInitWorkflow runs for one payment, for the whole chunk in one
// activity and one transaction, so a chunk costs one activity instead of
// thousands.
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
	if lineErrs := s.CheckBatch(reqs, nil); len(lineErrs) > 0 {
		return BatchSubmission{}, &BatchError{Lines: lineErrs}
	}
	return s.StartBatch(ctx, reqs)
}

// StartBatch is SubmitBatch for payments CheckBatch has passed (the HTTP
// handler checks a file once, to start its good payments and list the
// bad): it records the file and starts its chunk workflows without
// checking again. Phase A still validates each payment.
func (s *Service) StartBatch(ctx context.Context, reqs []Request) (BatchSubmission, error) {
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
	// The file is recorded before anything starts, so its progress can be
	// asked for at once.
	ids := make([]string, len(reqs))
	seen := map[string]bool{}
	var tenants []string
	for i, r := range reqs {
		ids[i] = r.PaymentID
		if !seen[r.TenantID] {
			seen[r.TenantID] = true
			tenants = append(tenants, r.TenantID)
		}
	}
	if s.Store != nil {
		planned := BatchSubmission{BatchID: sub.BatchID, Payments: len(reqs), Chunks: (len(reqs) + size - 1) / size}
		if err := s.Store.RecordBatch(ctx, planned, tenants, ids); err != nil {
			return sub, fmt.Errorf("payment: record batch %s: %w", sub.BatchID, err)
		}
	}
	// The chunks' workflows start a few at a time: each start carries its
	// chunk (a round trip with up to a megabyte to the engine's store), and
	// one after the other they took most of a large file's intake.
	var g errgroup.Group
	g.SetLimit(startConcurrency)
	var started atomic.Int64
	for start := 0; start < len(reqs); start += size {
		chunk := reqs[start:min(start+size, len(reqs))]
		id := fmt.Sprintf("init-%s-%d", sub.BatchID, start/size)
		g.Go(func() error {
			if err := s.startOnce(ctx, id, BatchWorkflowName, chunk); err != nil {
				return err
			}
			started.Add(1)
			return nil
		})
	}
	err := g.Wait()
	sub.Chunks = int(started.Load())
	return sub, err
}

// startConcurrency bounds the chunk workflow starts in flight for one file.
const startConcurrency = 8

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
