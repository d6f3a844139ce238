package screening

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/internal/strictjson"
)

// Verdict is the screening service's answer on one payment.
type Verdict string

// The verdicts.
const (
	// Clear: no list names the payment's parties.
	Clear Verdict = "CLEAR"
	// Hit: a list names them; the payment is held.
	Hit Verdict = "HIT"
	// Error: no usable answer (the service said so, or it timed out,
	// failed, or answered something this package refuses); the tenant's
	// rule decides.
	Error Verdict = "ERROR"
)

// Subject is what leaves paydispatch for one payment: what a sanctions
// and watch-list check matches on, and the ids to answer by. The debtor
// is the tenant's own customer, already known to it, so only its account
// id goes, for the service's case file; nothing of the payment's timing,
// rail or priority goes.
type Subject struct {
	// ID is the payment's key (payment.Key): the id the answer names.
	ID string `json:"id"`
	// TenantID and PaymentID: whose payment, by the tenant's own id, for
	// the service's case file.
	TenantID  string `json:"tenantId"`
	PaymentID string `json:"paymentId,omitempty"`
	// DebtorAccount is the tenant's id of the debtor's account.
	DebtorAccount string `json:"debtorAccount"`
	// The creditor: the name is what lists match; IBAN, BIC and country
	// (the IBAN's) tell a bank or country under sanctions.
	CreditorName    string `json:"creditorName"`
	CreditorIBAN    string `json:"creditorIban,omitempty"`
	CreditorBIC     string `json:"creditorBic,omitempty"`
	CreditorCountry string `json:"creditorCountry,omitempty"`
	// Amount (a decimal string) and Currency: thresholds and currencies
	// under embargo.
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
	// RemittanceInfo is free text that can name a sanctioned party or
	// place (screened as the name is).
	RemittanceInfo string `json:"remittanceInfo,omitempty"`
}

// Result is the answer on one payment.
type Result struct {
	Verdict Verdict
	// List names the list a HIT is on; Reason says why the service hit
	// it, or, for an ERROR, why there is no answer.
	List   string
	Reason string
}

// request is the body of a call.
type request struct {
	Payments []Subject `json:"payments"`
}

// answer is the body of the service's answer.
type answer struct {
	Results []answerItem `json:"results"`
}

type answerItem struct {
	ID      string `json:"id"`
	Verdict string `json:"verdict"`
	List    string `json:"list,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// maxText bounds a list name and a reason from the service: they end up
// in the payment's status reason.
const maxText = 200

// decodeAnswer reads the service's answer to a call about ids, one
// Result an id, in order. Whatever body holds, every id gets a Result and
// nothing panics: a body that is not a strict answer, or that names a
// payment not asked about (the service answered another call, so none of
// its verdicts can be trusted), is an ERROR for every id, and the error
// says why; an id answered twice, or with a verdict other than CLEAR, HIT
// and ERROR, or not answered, is an ERROR for that id.
func decodeAnswer(body []byte, ids []string) ([]Result, error) {
	out := make([]Result, len(ids))
	all := func(reason string) ([]Result, error) {
		reason = clean(reason)
		for i := range out {
			out[i] = Result{Verdict: Error, Reason: reason}
		}
		return out, errors.New(reason)
	}
	var a answer
	if err := strictjson.Decode(body, &a); err != nil {
		return all("malformed answer: " + err.Error())
	}
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	seen := make([]int, len(ids))
	for _, it := range a.Results {
		i, ok := at[it.ID]
		if !ok {
			return all(fmt.Sprintf("the answer names a payment not asked about (%q)", it.ID))
		}
		seen[i]++
		switch v := Verdict(it.Verdict); {
		case seen[i] > 1:
			out[i] = Result{Verdict: Error, Reason: "answered more than once"}
		case v == Clear:
			out[i] = Result{Verdict: Clear}
		case v == Hit:
			out[i] = Result{Verdict: Hit, List: clean(it.List), Reason: clean(it.Reason)}
		case v == Error:
			out[i] = Result{Verdict: Error, Reason: "the service's ERROR"}
			if r := clean(it.Reason); r != "" {
				out[i].Reason += ": " + r
			}
		default:
			out[i] = Result{Verdict: Error, Reason: plaintext.Clip(fmt.Sprintf("unknown verdict %q", it.Verdict), maxText)}
		}
	}
	for i, n := range seen {
		if n == 0 {
			out[i] = Result{Verdict: Error, Reason: "not answered"}
		}
	}
	return out, nil
}

// clean makes a text from the service fit for a status reason: printable
// and bounded.
func clean(s string) string {
	if !plaintext.Valid(s) {
		s = stripControls(s)
	}
	return plaintext.Clip(s, maxText)
}

func stripControls(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}
