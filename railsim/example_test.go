package railsim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

// A simulated rail on a free loopback port: one instruction accepted, one
// refused on request (RAIL-REJECT: in its remittance information), one
// resent; then the rail is made busy through the admin endpoint, and the
// ledger is read back.
func Example() {
	sim := railsim.New(railsim.Options{})
	url, stop, err := sim.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	send := func(key string, seq int64, remittance string) {
		in := rail.Instruction{
			PaymentID: key, EndToEndID: "E2E-" + key, Amount: "10.00", Currency: "EUR", ValueDate: "2026-11-23",
			Debtor:         rail.Debtor{Name: "ACME Corp", Account: "ACC-1"},
			Creditor:       rail.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"},
			RemittanceInfo: remittance, TenantID: "acme",
		}
		body, _ := json.Marshal(rail.JSONRequest{Instruction: in, ParticipantID: "bank-a", SequenceID: seq})
		req, _ := http.NewRequest(http.MethodPost, url+rail.PathInstructions, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(rail.HeaderIdempotencyKey, key)
		req.Header.Set(rail.HeaderParticipantID, "bank-a")
		req.Header.Set(rail.HeaderSequenceID, fmt.Sprint(seq))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		var a rail.Answer
		_ = json.NewDecoder(resp.Body).Decode(&a)
		fmt.Println(strings.TrimSpace(fmt.Sprint(key, " ", resp.StatusCode, " ", a.Status, " ", a.Code)))
	}
	send("pay-1", 1, "INV-1")
	send("pay-2", 2, "RAIL-REJECT:AC04")
	send("pay-1", 1, "INV-1") // a resend: the original answer, and a duplicate in the ledger

	req, _ := http.NewRequest(http.MethodPut, url+"/admin/behaviour", strings.NewReader(`{"retryableFraction":1}`))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	send("pay-3", 3, "INV-3")

	resp, err := http.Get(url + "/ledger")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var l railsim.LedgerView
	_ = json.NewDecoder(resp.Body).Decode(&l)
	fmt.Printf("received=%d unique=%d duplicates=%d refused=%d gaps=%d retryable=%d\n",
		l.Received, l.Unique, l.Duplicates, l.Refused, l.Gaps, l.RetryableAnswers)
	// Output:
	// pay-1 201 ACCEPTED
	// pay-2 422 REJECTED AC04
	// pay-1 201 ACCEPTED
	// pay-3 503  RAIL_BUSY
	// received=2 unique=1 duplicates=1 refused=1 gaps=0 retryable=1
}
