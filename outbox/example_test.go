package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/outbox"
)

// railStub stands in for a rail adapter (package rail): it accepts
// everything and answers with a reference.
type railStub struct{}

func (railStub) Validate(m outbox.Message) error { return nil }

func (railStub) Send(ctx context.Context, m outbox.Message) outbox.Result {
	return outbox.Result{Outcome: outbox.Delivered, Reference: "RAIL-" + m.IdempotencyKey}
}

func (railStub) Inquire(ctx context.Context, m outbox.Message) outbox.Result {
	return outbox.Result{Outcome: outbox.NotReceived}
}

// The domain enqueues an instruction in the transaction that books its
// payment; a relayer delivers it and the domain's hook hears of it in the
// transaction that records it; the archive tells the story.
func Example() {
	pool, drop, err := pgtest.Open() // a pgx pool on a database with the outbox's tables
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	ctx := context.Background()

	in := outbox.Instruction{
		InstructionID:  "pay-0001",
		ParticipantID:  "bank-a",
		IdempotencyKey: "pay-0001-v1",
		RailType:       "SEPA_CT",
		Payload:        json.RawMessage(`{"amount":"125.00","currency":"EUR","creditorIban":"DE89370400440532013000"}`),
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// ... the payment is booked here, in tx ...
		_, seq, created, err := outbox.Enqueue(ctx, tx, in)
		fmt.Println("enqueued: sequence", seq, "created", created)
		return err
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	delivered := make(chan outbox.Delivery, 1)
	r, err := outbox.New(outbox.Config{
		Pool:   pool,
		Sender: railStub{},
		Hooks: outbox.Hooks{
			OnDelivered: func(ctx context.Context, tx pgx.Tx, ds []outbox.Delivery) error {
				// ... the payment is set DELIVERED here, in tx ...
				for _, d := range ds {
					delivered <- d
				}
				return nil
			},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- r.Run(runCtx) }()
	d := <-delivered
	stop()
	if err := <-stopped; err != nil { // Run records what it sent before it returns
		panic(err)
	}
	fmt.Println("delivered:", d.Message.InstructionID, "sequence", d.Message.SequenceID, d.Result.Reference)

	attempts, err := outbox.Attempts(ctx, pool, in.InstructionID)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range attempts {
		line := fmt.Sprintf("attempt %d %s", a.AttemptNo, a.State)
		if a.RailReference != "" {
			line += " " + a.RailReference
		}
		fmt.Println(line)
	}
	// Output:
	// enqueued: sequence 1 created true
	// delivered: pay-0001 sequence 1 RAIL-pay-0001-v1
	// attempt 1 DISPATCHING
	// attempt 1 DISPATCHED RAIL-pay-0001-v1
}
