package payment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/routing"
)

// ChunkSize is how many payments of a bulk file one init workflow takes by
// default: a 500,000-payment file becomes 50 workflows, not 500,000. It is
// the part a file is stored in (receivePart), so each part's one chunk
// starts as it commits; smaller chunks cost the engine more (200 for
// 500,000 at 2,500: a tenth of the intake's CPU) and larger ones wait for
// a second part.
const ChunkSize = 10_000

// StartBatch stores a batch of payments CheckBatchFrom has passed (Take
// checks them once, to start the good and reject the bad): it takes the
// payments in (RECEIVED), records the batch and starts one PaymentPhaseA
// per chunk of ChunkSize, without checking again. The batch id is derived
// from the payments, so the same batch again starts nothing new.
// A payment whose id its tenant used for a different payment is not
// stored; its index in reqs is in Conflicts, and with whole set, nothing
// is (the error is then ErrConflict). Phase A still validates each
// payment. The payments are accepted once stored: a chunk whose start
// fails is started later by ResumeIntake, and the error says the file can
// be sent again.
func (s *Service) StartBatch(ctx context.Context, reqs []Request, whole bool) (BatchSubmission, error) {
	id, err := batchID(reqs)
	if err != nil {
		return BatchSubmission{}, err
	}
	sub := BatchSubmission{BatchID: id}
	size := s.cfg.ChunkSize
	if size <= 0 {
		size = ChunkSize
	}
	chunkID := func(n int) string { return chunkWorkflowID(sub.BatchID, n) }
	// A whole file is stored in one transaction, so that a conflict stores
	// nothing. Otherwise each part of it commits on its own and its chunks
	// start while the next part is stored: Phase A begins a second after
	// the file is read, not once all of it is stored. A part is whole
	// chunks.
	part := len(reqs)
	if !whole {
		part = max(size, receivePart/size*size)
	}
	todo := make(chan int, 64) // chunks stored, to start
	var g errgroup.Group
	g.SetLimit(startConcurrency)
	var started atomic.Int64
	starting := make(chan struct{})
	go func() {
		defer close(starting)
		for n := range todo {
			g.Go(func() error {
				if err := s.startOnce(ctx, chunkID(n)); err != nil {
					return err
				}
				started.Add(1)
				return nil
			})
		}
	}()
	wait := func() error {
		close(todo)
		<-starting
		err := g.Wait()
		sub.Chunks = int(started.Load())
		return err
	}

	var keys, tenants []string
	var chunkOf []int // each key's chunk
	seen := map[string]bool{}
	chunks := 0
	for from := 0; from < len(reqs); from += part {
		to := min(from+part, len(reqs))
		receipts, err := s.cfg.Store.Receive(ctx, reqs[from:to], func(i int) string { return chunkID((from + i) / size) }, whole)
		if errors.Is(err, ErrConflict) {
			for i, rc := range receipts {
				if rc.Conflict {
					sub.Conflicts = append(sub.Conflicts, from+i)
				}
			}
			return sub, errors.Join(fmt.Errorf("payment: batch %s: %w", sub.BatchID, err), wait())
		}
		if err != nil {
			// The parts stored before it are accepted, their chunks
			// started: the file sent again stores the rest.
			return sub, errors.Join(fmt.Errorf("payment: batch %s, payments %d to %d: %w", sub.BatchID, from+1, to, err), wait())
		}
		last := -1 // the last chunk with a payment of this part
		for i, rc := range receipts {
			if rc.Conflict {
				sub.Conflicts = append(sub.Conflicts, from+i)
				continue
			}
			keys, chunkOf = append(keys, rc.Key), append(chunkOf, (from+i)/size)
			if n := (from + i) / size; n != last {
				if last >= 0 {
					todo <- last
					chunks++
				}
				last = n
			}
			if t := reqs[from+i].TenantID; !seen[t] {
				seen[t] = true
				tenants = append(tenants, t)
			}
		}
		if last >= 0 {
			todo <- last
			chunks++
		}
	}
	sub.Payments = len(keys)
	if len(keys) == 0 {
		return sub, wait()
	}
	// The file is recorded before the answer, so its progress can be
	// asked for at once.
	planned := BatchSubmission{BatchID: sub.BatchID, Payments: len(keys), Chunks: chunks}
	if err := s.cfg.Store.RecordBatch(ctx, planned, tenants, keys, chunkOf); err != nil {
		return sub, errors.Join(fmt.Errorf("payment: record batch %s: %w", sub.BatchID, err), wait())
	}
	return sub, wait()
}

// batchID is a file's id: a hash of its payments' canonical forms, in
// order. Before any payment is stored, one core would encode them all
// while the other waits (a second at 500,000): the forms are encoded on
// every core, a block each at a time, and hashed in order, which gives
// the id one encoder gives.
func batchID(reqs []Request) (string, error) {
	h := sha256.New()
	workers := runtime.GOMAXPROCS(0)
	bufs := make([][]byte, workers)
	for from := 0; from < len(reqs); from += hashBlock * workers {
		var g errgroup.Group
		for w := range workers {
			lo, hi := min(from+w*hashBlock, len(reqs)), min(from+(w+1)*hashBlock, len(reqs))
			g.Go(func() error {
				b := bufs[w][:0]
				for _, r := range reqs[lo:hi] {
					var err error
					if b, err = appendCanonical(b, r); err != nil {
						return err
					}
				}
				bufs[w] = b
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return "", err
		}
		for _, b := range bufs {
			h.Write(b)
		}
	}
	return "batch-" + hex.EncodeToString(h.Sum(nil))[:24], nil
}

// hashBlock is how many payments one core encodes at a time for batchID.
const hashBlock = 4096

// chunkWorkflowID is the id of the Phase A workflow of a file's chunk n,
// and of its intake row.
func chunkWorkflowID(batchID string, n int) string {
	return batchIntakePrefix(batchID) + strconv.Itoa(n)
}

// receivePart is how many payments of a file one transaction stores, when
// the file is not taken whole.
const receivePart = 10_000

// startConcurrency bounds the chunk workflow starts in flight for one file.
const startConcurrency = 8

// CheckBatch is CheckBatchFrom for a file (source FILE).
func (s *Service) CheckBatch(ctx context.Context, reqs []Request, lines []int) ([]LineError, error) {
	return s.CheckBatchFrom(ctx, routing.SourceFile, reqs, lines)
}

// CheckBatchFrom validates payments that came together from source (a
// file, a chunk of Kafka records) and routes the valid ones, setting each
// one's rail in reqs; lines gives each payment's line number in the file
// (nil: 1, 2, ...). Every payment needs an id, and a tenant's id may
// appear once. It stops when ctx is done.
func (s *Service) CheckBatchFrom(ctx context.Context, source string, reqs []Request, lines []int) ([]LineError, error) {
	// Each payment's own checks (Validate, its route) on every core: one
	// core took a second of a 500,000-payment file while the other waited.
	// Then, in order, the ids given twice.
	own := make([][]field.Error, len(reqs))
	err := onEveryCore(len(reqs), func(lo, hi int) error {
		for i := lo; i < hi; i++ {
			if (i-lo)%1024 == 0 && ctx.Err() != nil {
				return fmt.Errorf("payment: checking a file stopped at payment %d: %w", i, context.Cause(ctx))
			}
			m, err := Validate(reqs[i], s.now())
			if err == nil {
				err = s.route(ctx, &reqs[i], m, source)
			}
			var ve *field.Invalid
			if errors.As(err, &ve) {
				own[i] = ve.Fields
			} else if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var errs []LineError
	seen := make(map[[2]string]int, len(reqs))
	for i, r := range reqs {
		line := i + 1
		if lines != nil {
			line = lines[i]
		}
		var fields []field.Error
		if r.PaymentID == "" {
			fields = append(fields, field.Error{Field: "paymentId", Detail: "required in a bulk file, so that a resubmitted file is recognized"})
		} else if prev, dup := seen[[2]string{r.TenantID, r.PaymentID}]; dup {
			fields = append(fields, field.Error{Field: "paymentId", Detail: fmt.Sprintf("also on line %d", prev)})
		} else {
			seen[[2]string{r.TenantID, r.PaymentID}] = line
		}
		fields = append(fields, own[i]...)
		if len(fields) > 0 {
			errs = append(errs, LineError{Line: line, Fields: fields})
		}
	}
	return errs, nil
}

// BatchSubmission is what StartBatch started.
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
	Line   int           `json:"line"`
	Fields []field.Error `json:"errors"`
	// TenantID is whose line it is ("" when no tenant can be told: an
	// operator's unreadable line), kept with the file's rejections so
	// each tenant is shown its own; never part of an answer.
	TenantID string `json:"-"`
	// Conflict: the line's payment id is one its tenant used for a
	// different payment.
	Conflict bool `json:"-"`
}

// onEveryCore splits n items into one contiguous range a core and runs
// work on each at once: a file's per-payment work, which one core took a
// second of at 500,000 payments while the other waited.
func onEveryCore(n int, work func(lo, hi int) error) error {
	workers := runtime.GOMAXPROCS(0)
	per := (n + workers - 1) / workers
	var g errgroup.Group
	for w := range workers {
		lo, hi := min(w*per, n), min((w+1)*per, n)
		g.Go(func() error { return work(lo, hi) })
	}
	return g.Wait()
}
