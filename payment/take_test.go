package payment_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/testkit/temporaltest"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// sourceRails routes every payment to DEFAULT and notes the sources the
// payments came from; nothing else is asked of it.
type sourceRails struct {
	otherRails
	mu      sync.Mutex
	sources []string
}

type otherRails = payment.Rails

func (r *sourceRails) Route(_ context.Context, p routing.Payment) (routing.Rail, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.sources, p.Source) {
		r.sources = append(r.sources, p.Source)
	}
	return routing.Rail{Name: routing.DefaultRail, Type: routing.TypeSEPAJSON, Active: true}, nil
}

// TestTakeFromEverySource: the API, a file and Kafka take payments
// through the one intake (Service.Take). Each way in reaches the routing
// as itself; an invalid payment and one whose id its tenant used for a
// different payment come back as rejections of their lines, the same
// whatever the way in; the good payment is stored and counted.
func TestTakeFromEverySource(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	_, c := temporaltest.Start(t)
	var first []payment.LineError
	for _, source := range []string{routing.SourceAPI, routing.SourceFile, routing.SourceKafka} {
		pool := newPool(t)
		rails := &sourceRails{}
		svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(pool), Queue: queue.New(pool), Temporal: c, Rails: rails})
		at := time.Now()
		used := validRequest(at)
		used.PaymentID = "used"
		if _, err := svc.Store().Receive(ctx, []payment.Request{used}, func(int) string { return "init-used" }, true); err != nil {
			t.Fatal(err)
		}
		good, bad, again := validRequest(at), validRequest(at), used
		good.PaymentID, bad.PaymentID, bad.Amount, again.Amount = "good", "bad", "0", "2.00"

		taken, err := svc.Take(ctx, payment.Intake{Source: source, Requests: []payment.Request{good, bad, again}})
		if err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		rj := taken.Rejections
		if len(rj) != 2 || rj[0].Line != 2 || rj[0].Conflict || len(rj[0].Fields) == 0 || rj[0].Fields[0].Field != "amount" ||
			rj[1].Line != 3 || !rj[1].Conflict || len(rj[1].Fields) != 1 || rj[1].Fields[0].Field != "paymentId" {
			t.Errorf("%s: rejections %+v; want line 2's amount, and line 3 an id conflict", source, rj)
		}
		if first == nil {
			first = rj
		} else if !reflect.DeepEqual(rj, first) {
			t.Errorf("%s: rejections %+v; want them as from %s: %+v", source, rj, routing.SourceAPI, first)
		}
		if taken.Payments != 1 || len(taken.Started) != 2 || taken.Started[0].PaymentID != "good" {
			t.Errorf("%s: %d payments, started %d; want good alone stored", source, taken.Payments, len(taken.Started))
		}
		if (taken.BatchID == "") != (source == routing.SourceAPI) {
			t.Errorf("%s: batch %q; want one for a file and a chunk, none from the API", source, taken.BatchID)
		}
		if !slices.Equal(rails.sources, []string{source}) {
			t.Errorf("%s: the routing saw sources %v", source, rails.sources)
		}
		if p, err := svc.Store().Find(ctx, "acme", "good"); err != nil || p.Status != payment.StatusReceived {
			t.Errorf("%s: the good payment %+v, %v; want it RECEIVED", source, p, err)
		}
		if p, err := svc.Store().Find(ctx, "acme", "used"); err != nil || p.Amount != "125.00" {
			t.Errorf("%s: the payment taken before %+v, %v; want it as it was", source, p, err)
		}
	}
}

// TestTakeWhole: taken whole, one rejected line, the caller's unreadable
// one among them, refuses every payment, and an id conflict stores none;
// the rejections are by line, each line once.
func TestTakeWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(pool), Queue: queue.New(pool)})
	at := time.Now()
	used := validRequest(at)
	used.PaymentID = "used"
	if _, err := svc.Store().Receive(ctx, []payment.Request{used}, func(int) string { return "init-used" }, true); err != nil {
		t.Fatal(err)
	}
	good, again := validRequest(at), used
	good.PaymentID, again.Amount = "good", "2.00"
	unreadable := payment.LineError{Line: 3}

	tests := []struct {
		name      string
		in        payment.Intake
		wantLines []int
	}{
		{"an unreadable line", payment.Intake{Source: routing.SourceFile, Requests: []payment.Request{good}, Lines: []int{1},
			Rejected: []payment.LineError{unreadable}, Whole: true}, []int{3}},
		{"an id conflict", payment.Intake{Source: routing.SourceFile, Requests: []payment.Request{good, again}, Lines: []int{1, 2}, Whole: true}, []int{2}},
	}
	for _, tt := range tests {
		taken, err := svc.Take(ctx, tt.in)
		var lines []int
		for _, le := range taken.Rejections {
			lines = append(lines, le.Line)
		}
		if err != nil || taken.Payments != 0 || len(taken.Started) != 0 || !slices.Equal(lines, tt.wantLines) {
			t.Errorf("%s: %+v, %v; want lines %v rejected and nothing started", tt.name, taken, err, tt.wantLines)
		}
		if _, err := svc.Store().Find(ctx, "acme", "good"); err == nil {
			t.Errorf("%s: the good payment was stored", tt.name)
		}
	}
}

// TestTakeDuplicateFilesAtOnce: the same payments sent as several files
// at once, each under ids of its own, are taken once: the others wait
// for the first's record and are refused, naming it.
func TestTakeDuplicateFilesAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	_, c := temporaltest.Start(t)
	pool := newPool(t)
	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(pool), Queue: queue.New(pool), Temporal: c,
		DuplicateFileWindow: 7 * 24 * time.Hour})
	at := time.Now()
	const files = 4
	errs := make([]error, files)
	taken := make([]payment.Taken, files)
	var wg sync.WaitGroup
	for f := range files {
		wg.Go(func() {
			rs := make([]payment.Request, 200)
			for i := range rs {
				rs[i] = validRequest(at)
				rs[i].PaymentID = fmt.Sprintf("at-once-%d-%03d", f, i)
				rs[i].Amount = fmt.Sprintf("%d.00", i+1)
			}
			taken[f], errs[f] = svc.Take(ctx, payment.Intake{Source: routing.SourceFile, Requests: rs})
		})
	}
	wg.Wait()
	var batch string
	for f := range files {
		if errs[f] == nil && taken[f].Payments == 200 {
			if batch != "" {
				t.Fatalf("two files of the same payments taken: %s and %s", batch, taken[f].BatchID)
			}
			batch = taken[f].BatchID
		}
	}
	for f := range files {
		var dup *payment.DuplicateFileError
		if errs[f] != nil && (!errors.As(errs[f], &dup) || dup.BatchID != batch) {
			t.Errorf("file %d: %v; want it refused as a duplicate of %s", f, errs[f], batch)
		}
	}
	if batch == "" {
		t.Fatalf("no file taken: %v", errs)
	}
}

// TestTakeListsSuspectedDuplicates: the intake's answer lists the payments
// that look like an earlier one of their tenant, in the file itself or
// taken in before (whose fingerprint Phase A's duplicate control kept),
// with what Phase A will do (the tenant's rule: WARN by default); a
// payment sent again under its own id is a replay, not a suspect.
func TestTakeListsSuspectedDuplicates(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	_, c := temporaltest.Start(t)
	pool := newPool(t)
	store := payment.NewStore(pool)
	svc := payment.NewService(payment.ServiceConfig{Store: store, Queue: queue.New(pool), Temporal: c})
	at := time.Now()
	earlier := validRequest(at)
	earlier.PaymentID = "salary-1"
	init := payment.NewInitActivities(payment.InitConfig{Store: store, Queue: queue.New(pool),
		Controls: []payment.Control{payment.NewDuplicateControl(payment.DuplicateConfig{Store: store})}})
	if _, err := init.InitChunk(ctx, []payment.Request{earlier}, "init-earlier"); err != nil {
		t.Fatal(err)
	}
	again, twin, twin2, other := earlier, earlier, earlier, validRequest(at)
	again.PaymentID, twin.PaymentID, twin2.PaymentID, other.PaymentID, other.Amount = "salary-1-again", "salary-1", "twin", "other", "7.00"
	twin2.Creditor.IBAN, twin2.Amount = "FR1420041010050500013M02606", "3.00"
	twin3 := twin2
	twin3.PaymentID = "twin-again"
	taken, err := svc.Take(ctx, payment.Intake{Source: routing.SourceFile, Requests: []payment.Request{other, again, twin, twin2, twin3}})
	if err != nil {
		t.Fatal(err)
	}
	want := []payment.SuspectedDuplicate{
		{Line: 2, PaymentID: "salary-1-again", Like: "salary-1", Action: payment.DuplicateWarn},
		{Line: 5, PaymentID: "twin-again", Like: "twin", Action: payment.DuplicateWarn},
	}
	if !reflect.DeepEqual(taken.Duplicates, want) {
		t.Fatalf("duplicates %+v, want %+v", taken.Duplicates, want)
	}
}
