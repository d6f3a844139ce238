package rail_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

// One instruction through the JSON rail to a simulated rail on a free
// loopback port, then what the rail's ledger saw.
func Example() {
	ctx := context.Background()
	sim := railsim.New(railsim.Options{})
	url, stop, err := sim.Start(ctx, "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	r, err := rail.NewHTTPRail(rail.Config{BaseURL: url})
	if err != nil {
		fmt.Println(err)
		return
	}
	payload, _ := json.Marshal(rail.Instruction{
		PaymentID:  "pay-0001",
		EndToEndID: "E2E-0001",
		Amount:     "125.00",
		Currency:   "EUR",
		ValueDate:  "2026-11-23",
		Debtor:     rail.Debtor{Name: "ACME Corp", Account: "ACC-1"},
		Creditor:   rail.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"},
		TenantID:   "acme",
	})
	m := outbox.Message{
		OutboxID:       uuid.New(),
		InstructionID:  "instr-0001",
		ParticipantID:  "bank-a",
		SequenceID:     1,
		IdempotencyKey: "pay-0001",
		RailType:       rail.RailSEPAJSON,
		Payload:        payload,
		Attempt:        1,
	}
	if err := r.Validate(m); err != nil {
		fmt.Println(err)
		return
	}
	res := r.Send(ctx, m)
	fmt.Println(res.Outcome, res.Reference != "")
	fmt.Println(r.Inquire(ctx, m).Outcome)

	l := sim.Ledger()
	fmt.Printf("received=%d unique=%d duplicates=%d gaps=%d reordered=%d\n", l.Received, l.Unique, l.Duplicates, l.Gaps, l.Reordered)
	// Output:
	// DELIVERED true
	// DELIVERED
	// received=1 unique=1 duplicates=0 gaps=0 reordered=0
}

func ExampleClassify() {
	for _, code := range []string{"AC04", "AM04", "RAIL_BUSY", "HTTP_503", rail.CodeTimeout, "NEVER_SEEN"} {
		fmt.Println(code, rail.Classify(code))
	}
	// Output:
	// AC04 TERMINAL
	// AM04 TERMINAL
	// RAIL_BUSY RETRYABLE
	// HTTP_503 RETRYABLE
	// TIMEOUT UNKNOWN
	// NEVER_SEEN RETRYABLE
}
