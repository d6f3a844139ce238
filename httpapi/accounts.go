package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/bankid"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/fx"
	"github.com/paydispatch/paydispatch/ledger/limit"
	"github.com/paydispatch/paydispatch/ledger/service"
	"github.com/paydispatch/paydispatch/money"
)

// Accounts is what the account endpoints need (ledger/service.Service).
type Accounts interface {
	CreateAccount(ctx context.Context, n service.NewAccount) (service.AccountView, bool, error)
	// Account finds the tenant's account with the id it chose; an empty
	// tenant looks in every tenant (ACCOUNT_AMBIGUOUS when several have it).
	Account(ctx context.Context, tenantID, id string) (service.AccountView, error)
}

// FXRates is what the FX-rate endpoints need (ledger/service.Service).
type FXRates interface {
	// SetRateTx sets a rate in the transaction of the change and its
	// audit entry (see auditAPI).
	SetRateTx(ctx context.Context, tx pgx.Tx, r fx.Rate) (fx.Rate, error)
	Rates(ctx context.Context) ([]fx.Rate, error)
}

// OperatorHeader names who acts: recorded with an admin change in the
// audit log, with an FX rate (without it the rate is set by "admin-api")
// and with a process action. The router refuses a bad one (checkActor).
const OperatorHeader = "X-Operator"

// accountsAPI serves the ledger's accounts.
type accountsAPI struct {
	rt       *Router
	accounts Accounts
}

// fxRatesAPI serves the FX rates (admin).
type fxRatesAPI struct {
	rt    *Router
	rates FXRates
}

// accountRequest is POST /v1/accounts' body. Money comes as decimal
// strings; it is read raw so that a JSON number is reported as the
// field's problem (a float on the way would have rounded it) rather than
// failing the whole body.
type accountRequest struct {
	AccountID  string          `json:"accountId"`
	TenantID   string          `json:"tenantId"`
	Currency   string          `json:"currency"`
	Balance    json.RawMessage `json:"balance"`
	LimitBased bool            `json:"limitBased"`
	Fee        json.RawMessage `json:"fee"`
	Limits     []struct {
		Period string          `json:"period"`
		Amount json.RawMessage `json:"amount"`
	} `json:"limits"`
}

// newAccount converts the request, listing the money fields it could not
// read; those are left zero for the validation of the rest.
func (req accountRequest) newAccount() (service.NewAccount, []field.Error) {
	var bad []field.Error
	n := service.NewAccount{Spec: account.Spec{
		AccountID: req.AccountID, TenantID: req.TenantID, Currency: req.Currency, LimitBased: req.LimitBased,
		OpeningBalance: decimalField(&bad, "balance", req.Balance, true, money.Signed),
		Fee:            decimalField(&bad, "fee", req.Fee, false, money.Unsigned),
	}}
	for i, l := range req.Limits {
		n.Limits = append(n.Limits, limit.Limit{
			Period: limit.Period(l.Period),
			Amount: decimalField(&bad, fmt.Sprintf("limits[%d].amount", i), l.Amount, true, money.Unsigned),
		})
	}
	return n, bad
}

// decimalField reads a JSON decimal string in the one form every number
// from outside takes (money.ParseDecimal); anything else is reported.
func decimalField(bad *[]field.Error, name string, raw json.RawMessage, required bool, sign money.Sign) decimal.Decimal {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		if required {
			*bad = append(*bad, field.Error{Field: name, Detail: `required, a decimal string such as "125.00"`})
		}
		return decimal.Zero
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		detail := "want a decimal string such as \"125.00\""
		if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
			detail = fmt.Sprintf("send the number as a string, \"%s\", not as a JSON number", plaintext.Clip(string(raw), 48))
		}
		*bad = append(*bad, field.Error{Field: name, Detail: detail})
		return decimal.Zero
	}
	d, err := money.ParseDecimal(s, sign)
	if err != nil {
		*bad = append(*bad, field.Error{Field: name, Detail: err.Error()})
		return decimal.Zero
	}
	return d
}

// invalidAccount validates n and reports unreadable fields and invalid
// ones together, each field once; nil when all is well.
func invalidAccount(n service.NewAccount, unreadable []field.Error) *Problem {
	bad := merge(unreadable, invalidFields(service.Validate(n)))
	if len(bad) == 0 {
		return nil
	}
	p := fieldProblem("Invalid account", bad)
	return &p
}

// merge appends the field errors of more whose field is not in bad yet.
func merge(bad, more []field.Error) []field.Error {
	seen := map[string]bool{}
	for _, f := range bad {
		seen[f.Field] = true
	}
	for _, f := range more {
		if !seen[f.Field] {
			bad = append(bad, f)
		}
	}
	return bad
}

func fieldProblem(title string, bad []field.Error) Problem {
	p := Problem{Status: http.StatusUnprocessableEntity, Title: title,
		Detail: fmt.Sprintf("%d field(s) need fixing; nothing was stored", len(bad))}
	p.Errors = append(p.Errors, bad...)
	return p
}

// AccountResponse is an account's JSON form (AccountJSON).
type AccountResponse struct {
	AccountID          string                `json:"accountId"`
	TenantID           string                `json:"tenantId"`
	Currency           string                `json:"currency"`
	Balance            string                `json:"balance"`
	OpeningBalance     string                `json:"openingBalance"`
	LimitBased         bool                  `json:"limitBased"`
	Fee                string                `json:"fee"`
	Limits             []limitResponse       `json:"limits"`
	RecentTransactions []transactionResponse `json:"recentTransactions"`
	CreatedAt          time.Time             `json:"createdAt"`
	UpdatedAt          time.Time             `json:"updatedAt"`
}

type limitResponse struct {
	Period      string    `json:"period"`
	Amount      string    `json:"amount"`
	WindowStart time.Time `json:"windowStart"`
	WindowEnd   time.Time `json:"windowEnd"`
	Utilized    string    `json:"utilized"`
	Available   string    `json:"available"`
}

type transactionResponse struct {
	TransactionID string    `json:"transactionId"`
	Seq           int64     `json:"seq"`
	Type          string    `json:"type"`
	Amount        string    `json:"amount"`
	Fee           string    `json:"fee"`
	BalanceAfter  string    `json:"balanceAfter"`
	Reverses      string    `json:"reverses,omitempty"`
	Reference     string    `json:"reference"`
	Description   string    `json:"description,omitempty"`
	ValueDate     string    `json:"valueDate"`
	CreatedAt     time.Time `json:"createdAt"`
}

// AccountJSON is an account as the API and the CLI show it: money as
// strings in the currency's minor units ("100.00", JPY "100").
func AccountJSON(v service.AccountView) AccountResponse {
	digits, _ := money.MinorUnits(v.Currency)
	amt := func(d decimal.Decimal) string { return d.StringFixedBank(digits) }
	out := AccountResponse{
		AccountID: v.External(), TenantID: v.TenantID, Currency: v.Currency, Balance: amt(v.Balance),
		OpeningBalance: amt(v.OpeningBalance), LimitBased: v.LimitBased, Fee: amt(v.Fee),
		Limits: []limitResponse{}, RecentTransactions: []transactionResponse{}, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt,
	}
	for _, l := range v.Limits {
		out.Limits = append(out.Limits, limitResponse{Period: string(l.Period), Amount: amt(l.Limit),
			WindowStart: l.WindowStart, WindowEnd: l.WindowEnd, Utilized: amt(l.Utilized), Available: amt(l.Available)})
	}
	for _, t := range v.RecentTransactions {
		tr := transactionResponse{TransactionID: t.TransactionID.String(), Seq: t.Seq, Type: string(t.Type),
			Amount: amt(t.Amount), Fee: amt(t.Fee), BalanceAfter: amt(t.BalanceAfter), Reference: t.Reference,
			Description: t.Description, ValueDate: t.ValueDate.Format(time.DateOnly), CreatedAt: t.CreatedAt}
		if t.Reverses != nil {
			tr.Reverses = t.Reverses.String()
		}
		out.RecentTransactions = append(out.RecentTransactions, tr)
	}
	return out
}

type rateResponse struct {
	Base      string    `json:"base"`
	Quote     string    `json:"quote"`
	Rate      string    `json:"rate"`
	Dealable  bool      `json:"dealable"`
	UpdatedAt time.Time `json:"updatedAt"`
	SetBy     string    `json:"setBy"`
}

func rateJSON(r fx.Rate) rateResponse {
	return rateResponse{Base: r.Base, Quote: r.Quote, Rate: r.Rate.String(), Dealable: r.Dealable, UpdatedAt: r.UpdatedAt, SetBy: r.SetBy}
}

// create serves POST /v1/accounts.
func (api *accountsAPI) create(w http.ResponseWriter, r *http.Request) {
	var req accountRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if prob := claimTenant(r, &req.TenantID); prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	n, bad := req.newAccount()
	if prob := invalidAccount(n, bad); prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	v, created, err := api.accounts.CreateAccount(r.Context(), n)
	switch code := ledger.CodeOf(err); {
	case code == ledger.CodeInvalidArgument:
		WriteProblem(w, r, *invalidAccount(n, invalidFields(err)))
	case code == ledger.CodeAccountConflict:
		WriteProblem(w, r, Problem{Status: http.StatusConflict, Title: "Account id already used",
			Detail: "tenant " + n.TenantID + " already has an account " + n.AccountID + " with a different currency, balance, fee, limit basis or limits; use a new id",
			Errors: []field.Error{{Field: "accountId", Detail: "already used by this tenant for a different account"}}})
	case err != nil:
		api.rt.log.Error("account creation failed", "account", bankid.Mask(n.AccountID), "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the account could not be created now; retrying the same request is safe"})
	case created:
		w.Header().Set("Location", "/v1/accounts/"+n.AccountID)
		WriteJSON(w, http.StatusCreated, AccountJSON(v))
	default:
		WriteJSON(w, http.StatusOK, AccountJSON(v))
	}
}

// get serves GET /v1/accounts/{id}.
func (api *accountsAPI) get(w http.ResponseWriter, r *http.Request) {
	v, ok := findOwned(api.rt, w, r, "account", api.accounts.Account, func(v service.AccountView) string { return v.TenantID },
		ledger.ErrAccountNotFound, ledger.ErrAccountAmbiguous)
	if ok {
		WriteJSON(w, http.StatusOK, AccountJSON(v))
	}
}

// set serves POST /admin/fx-rates.
func (api *fxRatesAPI) set(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Base  string          `json:"base"`
		Quote string          `json:"quote"`
		Rate  json.RawMessage `json:"rate"`
		// Dealable false publishes the rate for quotes but refuses
		// contracts at it (dealing suspended); default true.
		Dealable *bool `json:"dealable"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	var bad []field.Error
	rate := decimalField(&bad, "rate", req.Rate, true, money.Unsigned)
	if err := fx.ValidateRate(req.Base, req.Quote, rate); err != nil {
		bad = merge(bad, invalidFields(err))
	}
	if len(bad) > 0 {
		WriteProblem(w, r, fieldProblem("Invalid FX rate", bad))
		return
	}
	dealable := req.Dealable == nil || *req.Dealable
	got, err := api.rates.SetRateTx(r.Context(), changeTx(r), fx.Rate{Base: req.Base, Quote: req.Quote, Rate: rate, Dealable: dealable, SetBy: operatorOf(r)})
	switch {
	case ledger.CodeOf(err) == ledger.CodeInvalidArgument:
		WriteProblem(w, r, fieldProblem("Invalid FX rate", invalidFields(err)))
	case err != nil:
		api.rt.log.Error("setting an FX rate failed", "base", req.Base, "quote", req.Quote, "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the rate could not be set now; retry"})
	default:
		WriteJSON(w, http.StatusOK, rateJSON(got))
	}
}

// list serves GET /admin/fx-rates.
func (api *fxRatesAPI) list(w http.ResponseWriter, r *http.Request) {
	pg, prob := readPage(r, anyPosition)
	if prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	rates, err := api.rates.Rates(r.Context())
	if err != nil {
		api.rt.log.Error("listing FX rates failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the rates cannot be listed now; retry"})
		return
	}
	rates, next := paginate(rates, func(x fx.Rate) string { return x.Base + "/" + x.Quote }, pg)
	out := make([]rateResponse, len(rates))
	for i, x := range rates {
		out[i] = rateJSON(x)
	}
	WriteJSON(w, http.StatusOK, listJSON("rates", out, next))
}
