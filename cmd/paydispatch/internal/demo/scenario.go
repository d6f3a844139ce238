package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/bankid"
	"github.com/paydispatch/paydispatch/client"
	"github.com/paydispatch/paydispatch/payment"
)

// tenants and their share of the payments.
var tenants = []struct {
	id    string
	share float64
}{{"acme", 0.5}, {"bravo", 0.3}, {"cobalt", 0.2}}

// Accounts with a part to play. Every tenant has a rich EUR account
// (<TENANT>-EUR) its ordinary payments debit.
const (
	accUSD     = "ACME-USD"       // USD, pays in EUR: each payment converts (FX)
	accPoor    = "BRAVO-POOR"     // EUR 1,000.00: most of its payments find too little money
	accLimited = "COBALT-LIMITED" // a daily limit of EUR 1,000.00
	accGhost   = "ACME-GHOST"     // never opened: its payments are REJECTED at Phase A
)

// The poor account holds poorBalance and pays poorAmount each time; the
// limited one may pay dayLimit a day, limitedAmount each time. So exactly
// poorBalance/poorAmount and dayLimit/limitedAmount of their payments
// succeed, whatever the order.
const (
	poorBalance, poorAmount = "1000", "100.00"
	dayLimit, limitedAmount = "1000", "250.00"
	poorFit, limitFit       = 10, 4
)

// kind is what a payment is meant to show.
type kind int

const (
	kindOrdinary kind = iota
	kindFX            // converts USD → EUR
	kindNoFunds       // BRAVO-POOR: INSUFFICIENT_FUNDS for most
	kindLimit         // COBALT-LIMITED: LIMIT_EXCEEDED for most
	kindNoFX          // EUR → GBP, a rate not dealable: FX_UNAVAILABLE
	kindBad           // an account that does not exist: REJECTED
	kindInvalid       // an invalid IBAN: refused at intake, never stored
)

var kindNames = map[kind]string{
	kindOrdinary: "ordinary", kindFX: "converted (FX)", kindNoFunds: "from an account short of money",
	kindLimit: "over a daily limit", kindNoFX: "FX unavailable", kindBad: "unknown account (rejected at Phase A)",
	kindInvalid: "invalid IBAN (refused at intake)",
}

type planned struct {
	req    payment.Request
	kind   kind
	single bool // sent as one API call, not in the tenant's file
}

// minSingles is how many of a plan's last payments are single calls at
// least (those that are ordinary).
const minSingles = 3

// plan makes n payments due at instant, reproducibly from seed: most
// ordinary, a few of each kind meant to fail, about 1 % as single calls.
func plan(n int, instant time.Time, seed uint64) []planned {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	special := []struct {
		k     kind
		count int
	}{
		{kindFX, max(n/20, 5)}, {kindNoFunds, 30}, {kindLimit, 12}, {kindNoFX, 10}, {kindBad, max(n/200, 5)}, {kindInvalid, 3},
	}
	kinds := make([]kind, n)
	i := 0
	for _, s := range special {
		for range s.count {
			if i < n {
				kinds[i] = s.k
				i++
			}
		}
	}
	r.Shuffle(len(kinds), func(a, b int) { kinds[a], kinds[b] = kinds[b], kinds[a] })
	out := make([]planned, n)
	taken := map[string]bool{} // the payments' duplicate fingerprints
	for i, k := range kinds {
		t := tenantFor(k, r.Float64())
		req := payment.Request{
			PaymentID: fmt.Sprintf("demo-%s-%06d", t, i), TenantID: t, DebtorAccount: mainAccount(t),
			Currency:               "EUR",
			Creditor:               payment.Creditor{Name: creditors[r.IntN(len(creditors))], IBAN: ibans[r.IntN(len(ibans))]},
			RequestedExecutionTime: instant, RemittanceInfo: fmt.Sprintf("invoice %d", 100000+i),
		}
		switch k {
		case kindFX:
			req.DebtorAccount = accUSD
		case kindNoFunds:
			// The same amount each time: each to a creditor of its own.
			req.DebtorAccount, req.Amount, req.Creditor.IBAN = accPoor, poorAmount, ibanDE(i)
		case kindLimit:
			req.DebtorAccount, req.Amount, req.Creditor.IBAN = accLimited, limitedAmount, ibanDE(i)
		case kindNoFX:
			req.Currency = "GBP"
		case kindBad:
			req.DebtorAccount = accGhost
		case kindInvalid:
			req.Creditor.IBAN = "DE00 0000 0000 0000 0000 00"
		}
		// No payment is a duplicate of another (the same debtor account,
		// creditor, amount and currency on one day): cobalt holds those.
		for req.Amount == "" || taken[fingerprint(req)] {
			req.Amount = decimal.New(int64(100+r.IntN(49_900)), -2).StringFixed(2)
		}
		taken[fingerprint(req)] = true
		// About 1 %, and at least the last few ordinary payments of a
		// small run, so that every run has single calls.
		single := k != kindInvalid && (r.IntN(100) == 0 || (k == kindOrdinary && i >= n-minSingles))
		if single {
			// The single calls are sent last and are HIGH: the lever
			// that puts them ahead of the files already waiting.
			req.Priority = payment.PriorityHigh
		}
		out[i] = planned{req: req, kind: k, single: single}
	}
	return out
}

// fingerprint is what makes two payments of a day suspected duplicates.
func fingerprint(r payment.Request) string {
	return r.DebtorAccount + "|" + bankid.Electronic(r.Creditor.IBAN) + "|" + r.Amount + "|" + r.Currency
}

// ibanDE is a valid German IBAN of bank code 37040044 and account n.
func ibanDE(n int) string {
	bban := fmt.Sprintf("37040044%010d", n)
	// ISO 13616: the BBAN, then "DE00" in digits (D=13, E=14), mod 97.
	rem := 0
	for _, c := range bban + "131400" {
		rem = (rem*10 + int(c-'0')) % 97
	}
	return fmt.Sprintf("DE%02d%s", 98-rem, bban)
}

func tenantFor(k kind, f float64) string {
	switch k {
	case kindFX, kindBad:
		return "acme"
	case kindNoFunds, kindNoFX:
		return "bravo"
	case kindLimit:
		return "cobalt"
	}
	for _, t := range tenants {
		if f < t.share {
			return t.id
		}
		f -= t.share
	}
	return tenants[0].id
}

func mainAccount(tenant string) string {
	return map[string]string{"acme": "ACME-EUR", "bravo": "BRAVO-EUR", "cobalt": "COBALT-EUR"}[tenant]
}

var creditors = []string{"Jane Doe", "Müller GmbH", "Société Générale Services", "Acme Supplies Ltd", "Oy Pohjola Ab"}

// Valid IBANs of several countries (check digits correct).
var ibans = []string{"DE89370400440532013000", "FR1420041010050500013M02606", "NL91ABNA0417164300", "ES9121000418450200051332", "IT60X0542811101000000123456"}

// PersonalData is what the demo's payments tell of their creditors: their
// names and IBANs, which PostgreSQL keeps and the workflow engine must
// never be given.
func PersonalData() []string { return append(slices.Clone(creditors), ibans...) }

// setUp opens the accounts and sets the FX rates, as an operator would
// over the API.
func setUp(ctx context.Context, admin *client.Client) error {
	const big = "100000000.00"
	acct := func(id, tenant, currency, balance string) client.AccountRequest {
		return client.AccountRequest{AccountId: id, TenantId: client.NewOptString(tenant), Currency: currency, Balance: balance}
	}
	limited := acct(accLimited, "cobalt", "EUR", big)
	// LimitBased: its payments book the account's limits.
	limited.LimitBased = client.NewOptBool(true)
	limited.Limits = []client.LimitRequest{{Period: client.LimitRequestPeriodDAY, Amount: dayLimit + ".00"}}
	for _, a := range []client.AccountRequest{
		acct("ACME-EUR", "acme", "EUR", big),
		acct("BRAVO-EUR", "bravo", "EUR", big),
		acct("COBALT-EUR", "cobalt", "EUR", big),
		acct(accUSD, "acme", "USD", big),
		acct(accPoor, "bravo", "EUR", poorBalance+".00"),
		limited,
	} {
		if err := client.Check(admin.CreateAccount(ctx, &a, client.CreateAccountParams{})); err != nil {
			return fmt.Errorf("open account %s: %w", a.AccountId, err)
		}
	}
	// USD → EUR converts; EUR → GBP is published but not dealable, so
	// payments in GBP from a EUR account fail with FX_UNAVAILABLE.
	for _, r := range []client.FxRateRequest{
		{Base: "USD", Quote: "EUR", Rate: "0.9215", Dealable: client.NewOptBool(true)},
		{Base: "EUR", Quote: "GBP", Rate: "0.8432", Dealable: client.NewOptBool(false)},
	} {
		if err := client.Check(admin.SetFxRate(ctx, &r, client.SetFxRateParams{})); err != nil {
			return fmt.Errorf("set FX rate %s/%s: %w", r.Base, r.Quote, err)
		}
	}
	return nil
}

// jsonLines is a tenant's bulk file.
func jsonLines(reqs []payment.Request) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, r := range reqs {
		if err := enc.Encode(r); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}
