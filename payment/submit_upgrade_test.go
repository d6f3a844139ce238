package payment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/fx"
	"github.com/paydispatch/paydispatch/ledger/limit"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/process"
)

// TestSubmitPaymentUpgrade: a SubmitPayment that the untyped code left
// open — CreateTransaction done, its data the JSON that code wrote (every
// key of a string map, the FX quote a nested object), its log and inbox
// row as it wrote them — is driven to its end by SubmitState: through
// BookLimits, BookFx at the stored quote though the rate moved since, and
// CreatePayment; or, the rate suspended since, compensated with the
// stored data. Every key the old data had is still there, with its value.
func TestSubmitPaymentUpgrade(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		suspend     bool
		want        process.Status
		wantCode    string
		wantSteps   []string
		wantBalance string
		wantUsed    string
		wantAdded   []string // keys the new code added to the data
	}{
		{name: "completes", want: process.StatusSucceeded, wantBalance: "373.50", wantUsed: "125.00",
			wantSteps: []string{"CreateTransaction", "BookLimits", "BookFx", "CreatePayment"},
			wantAdded: []string{"fxContractId", "limitPeriods", "outboxId", "railSequence", "valueDate"}},
		{name: "compensates", suspend: true, want: process.StatusCompensated, wantCode: "FX_UNAVAILABLE", wantBalance: "500.00", wantUsed: "0.00",
			wantSteps: []string{"CreateTransaction", "BookLimits", "ReverseLimits", "ReverseTransaction"},
			wantAdded: []string{"limitPeriods", "limitsReversed", "reversalTransactionId"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newSaga(t)
			s.account(t, account.Spec{AccountID: "ACC-FX", TenantID: "acme", Currency: "USD", LimitBased: true, OpeningBalance: dec("500"), Fee: dec("1.50")},
				limit.Limit{Period: limit.Day, Amount: dec("1000")})
			s.rate(t, "EUR", "USD", "1.25", true)
			pc := s.schedule(t, paymentTo("pay-old", "ACC-FX", "100.00", "EUR"))["pay-old"]
			key := payment.Key("acme", "pay-old")
			id := process.ID(payment.SubmitPaymentType, key)
			old := s.oldOpenProcess(t, key, pc)

			// Since then: a new rate, or none to deal at.
			s.rate(t, "EUR", "USD", "1.30", !tt.suspend)
			out, err := process.RunDirect(ctx, s.acts, process.Options{Type: payment.SubmitPaymentType, BusinessKey: key})
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != tt.want || out.ErrorCode != tt.wantCode {
				t.Fatalf("outcome %+v, want %s %q", out, tt.want, tt.wantCode)
			}
			log, err := process.Log(ctx, s.pool, id)
			if err != nil {
				t.Fatal(err)
			}
			if done := stepsDone(log); fmt.Sprint(done) != fmt.Sprint(tt.wantSteps) {
				t.Fatalf("steps completed %v, want %v", done, tt.wantSteps)
			}
			if b := s.balance(t, "ACC-FX"); b.StringFixed(2) != tt.wantBalance {
				t.Fatalf("balance %s, want %s", b, tt.wantBalance)
			}
			if used := s.utilized(t, "ACC-FX")[limit.Day]; used != tt.wantUsed {
				t.Fatalf("day limit used %s, want %s", used, tt.wantUsed)
			}
			p, err := payment.NewStore(s.pool).Find(ctx, "acme", "pay-old")
			if err != nil {
				t.Fatal(err)
			}
			_, _, outboxErr := outbox.Lookup(ctx, s.pool, key, key)
			if succeeded := tt.want == process.StatusSucceeded; succeeded != (p.Status == payment.StatusAccepted) || succeeded != (outboxErr == nil) {
				t.Fatalf("payment %s (%q), its rail instruction: %v", p.Status, p.StatusReason, outboxErr)
			}
			if tt.want == process.StatusSucceeded {
				c, err := fx.ContractByReference(ctx, s.pool, id.String()+":"+payment.StepBookFx)
				if err != nil {
					t.Fatal(err)
				}
				// The rate is 1.30 now: the contract is the stored quote's.
				if c.Rate.String() != "1.25" || c.DebitAmount.String() != "125" || c.CreditAmount.String() != "100" {
					t.Fatalf("contract %+v: not the stored quote", c)
				}
			}

			// The old keys kept, with their values; the new ones added.
			inst, err := process.Get(ctx, s.pool, id)
			if err != nil {
				t.Fatal(err)
			}
			now := jsonObject(t, inst.Data)
			for k, v := range old {
				if !reflect.DeepEqual(now[k], v) {
					t.Errorf("data %s: %v, was %v", k, now[k], v)
				}
			}
			var added []string
			for k := range now {
				if _, ok := old[k]; !ok {
					added = append(added, k)
				}
			}
			if slices.Sort(added); !slices.Equal(added, tt.wantAdded) {
				t.Errorf("data gained %v, want %v", added, tt.wantAdded)
			}
			var st payment.SubmitState
			if err := json.Unmarshal(inst.Data, &st); err != nil || st.Quote == nil || st.Quote.Rate.String() != "1.25" || !st.LimitBased {
				t.Fatalf("data as SubmitState: %+v %v", st, err)
			}
			s.verify(t)
		})
	}
}

// oldQuotedAt is when the old process's quote was taken.
var oldQuotedAt = time.Date(2026, 3, 2, 9, 0, 0, 123456000, time.UTC)

// oldOpenProcess writes what the untyped SubmitPayment left of a payment
// stopped after CreateTransaction: the debit (the account's fee on top)
// and the payment begun, as that step did them; the instance RUNNING at
// BookLimits with its data — the initial data merged with the step's
// result, top-level keys, as that code merged them — and the step's log
// entries and inbox row. It returns the data.
func (s *saga) oldOpenProcess(t *testing.T, key string, pc payment.Context) map[string]any {
	t.Helper()
	ctx := context.Background()
	id := process.ID(payment.SubmitPaymentType, key)
	at := time.Now().UTC()
	if err := payment.NewStore(s.pool).Begin(ctx, key, at); err != nil {
		t.Fatal(err)
	}
	posted, err := account.Debit(ctx, s.pool, account.Entry{
		AccountID: "ACC-FX", Amount: dec("125"), Currency: "USD", ChargeFee: true,
		Reference: id.String() + ":" + payment.StepCreateTransaction, Description: "payment " + key,
		ValueDate: time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC),
	})
	if err != nil {
		t.Fatal(err)
	}
	r := pc.Request
	initial := fmt.Sprintf(`{"accountId":"ACC-FX","amount":%q,"creditorBic":"COBADEFFXXX","creditorIban":%q,`+
		`"creditorName":%q,"currency":"EUR","debtorAccount":"ACC-FX","executionTime":%q,"externalId":"pay-old",`+
		`"paymentId":%q,"remittanceInfo":%q,"tenantId":"acme"}`,
		pc.Amount, pc.Enrichment.CreditorIBAN, r.Creditor.Name, at.Format(time.RFC3339Nano), key, r.RemittanceInfo)
	result := fmt.Sprintf(`{"accountCurrency":"USD","debitAmount":"125","debitTransactionId":%q,"executionBegun":true,`+
		`"feeAmount":%q,"fxNeeded":true,"limitBased":true,"quote":{"creditAmount":"100","creditCurrency":"EUR",`+
		`"debitAmount":"125","debitCurrency":"USD","quotedAt":%q,"rate":"1.25","rateBase":"EUR","rateQuote":"USD"}}`,
		posted.TransactionID, posted.Fee.String(), oldQuotedAt.Format(time.RFC3339Nano))
	if _, err := s.pool.Exec(ctx, `
		WITH instance AS (
			INSERT INTO process_instance (process_id, process_type, business_key, status, current_step, data, version, workflow_id)
			VALUES ($1, 'SubmitPayment', $2, 'RUNNING', 'BookLimits', $3::jsonb || $4::jsonb, 2, 'payment-exec-old')
		), inbox AS (
			INSERT INTO process_inbox (key, process_id, step, result) VALUES ($5, $1, 'CreateTransaction', $4::jsonb)
		)
		INSERT INTO process_log (process_id, event, step, attempt, detail) VALUES
			($1, 'ProcessStarted', 'CreateTransaction', 0, jsonb_build_object('data', $3::jsonb, 'workflowId', 'payment-exec-old')),
			($1, 'StepStarted', 'CreateTransaction', 1, '{}'),
			($1, 'StepCompleted', 'CreateTransaction', 1, jsonb_build_object('result', $4::jsonb, 'next', 'BookLimits'))`,
		id, key, initial, result, id.String()+":CreateTransaction"); err != nil {
		t.Fatal(err)
	}
	inst, err := process.Get(ctx, s.pool, id)
	if err != nil {
		t.Fatal(err)
	}
	return jsonObject(t, inst.Data)
}

func jsonObject(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}
