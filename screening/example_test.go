package screening_test

import (
	"context"
	"fmt"

	"github.com/paydispatch/paydispatch/screening"
)

// A client asks the simulator about three payments, in batches of two:
// the listed creditor is a hit, the others are clear.
func Example() {
	sim, err := screening.NewSimulator(screening.SimOptions{Names: []string{"Ivan Listed"}})
	if err != nil {
		panic(err)
	}
	url, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer stop()
	c, err := screening.NewClient(screening.ClientConfig{URL: url, BatchSize: 2})
	if err != nil {
		panic(err)
	}
	payments := []screening.Subject{
		{ID: "k-1", TenantID: "acme", PaymentID: "p-1", CreditorName: "Jane Doe", Amount: "10.00", Currency: "EUR"},
		{ID: "k-2", TenantID: "acme", PaymentID: "p-2", CreditorName: "Ivan Listed", Amount: "20.00", Currency: "EUR"},
		{ID: "k-3", TenantID: "acme", PaymentID: "p-3", CreditorName: "John Roe", Amount: "30.00", Currency: "EUR"},
	}
	res, err := c.Screen(context.Background(), payments)
	if err != nil {
		panic(err)
	}
	for i, r := range res {
		if r.Verdict == screening.Hit {
			fmt.Println(payments[i].PaymentID, r.Verdict, "→", screening.HitReason(r.List, r.Reason))
			continue
		}
		fmt.Println(payments[i].PaymentID, r.Verdict)
	}
	fmt.Println("calls:", sim.Stats().Calls)
	// Output:
	// p-1 CLEAR
	// p-2 HIT → SCREENING: SIM-NAMES: creditor name listed
	// p-3 CLEAR
	// calls: 2
}
