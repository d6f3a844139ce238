package account

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/money"
)

// Spec is what an account is created with; it never changes afterwards.
type Spec struct {
	// AccountID is the account's key in the ledger: what postings, limits
	// and FX contracts name.
	AccountID string `json:"accountId"`
	// ExternalID is the id its tenant chose, unique within the tenant
	// ("": AccountID). An account created through ledger/service has the
	// key Key(TenantID, ExternalID).
	ExternalID     string          `json:"externalId,omitempty"`
	TenantID       string          `json:"tenantId"`
	Currency       string          `json:"currency"`
	OpeningBalance decimal.Decimal `json:"openingBalance"`
	LimitBased     bool            `json:"limitBased"`
	// Fee is the flat fee per payment, in the account currency (0: none).
	Fee decimal.Decimal `json:"fee"`
}

// Account is a stored account.
type Account struct {
	Spec
	Balance   decimal.Decimal `json:"balance"`
	TxnSeq    int64           `json:"txnSeq"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// Validate reports every bad field of s (JSON names) as INVALID_ARGUMENT.
func (s Spec) Validate() error {
	var v field.Invalid
	if !field.ValidID(s.AccountID) || s.ExternalID != "" && !field.ValidID(s.ExternalID) {
		v.Add("accountId", "required: 1 to 64 letters, digits, '-', '_' or '.'")
	}
	if !field.ValidID(s.TenantID) {
		v.Add("tenantId", "required: 1 to 64 letters, digits, '-', '_' or '.'")
	}
	digits, ok := money.MinorUnits(s.Currency)
	if !ok {
		v.Add("currency", fmt.Sprintf("%q is not an ISO 4217 currency code such as EUR", s.Currency))
	}
	check := func(field string, d decimal.Decimal) {
		switch {
		case !money.Plausible(d):
			v.Add(field, fmt.Sprintf("not a plausible amount (exponent %d)", d.Exponent()))
		case d.IsNegative():
			v.Add(field, "must not be negative")
		case !d.LessThan(money.MaxAmount):
			v.Add(field, "must be below "+money.MaxAmount.String())
		case ok && !d.Equal(d.Truncate(digits)):
			v.Add(field, fmt.Sprintf("%s has more decimals than %s's %d", d, s.Currency, digits))
		}
	}
	check("balance", s.OpeningBalance)
	check("fee", s.Fee)
	return ledger.InvalidArgument("account", v.Fields)
}

// External is the id the account's tenant knows it by.
func (s Spec) External() string {
	if s.ExternalID != "" {
		return s.ExternalID
	}
	return s.AccountID
}

// Equal reports whether two specs describe the same account of a tenant
// (amounts by value: 100 equals 100.00). The keys are not compared: an
// account created before ids were scoped to tenants has its id as its key.
func (s Spec) Equal(o Spec) bool {
	return s.External() == o.External() && s.TenantID == o.TenantID && s.Currency == o.Currency &&
		s.OpeningBalance.Equal(o.OpeningBalance) && s.LimitBased == o.LimitBased && s.Fee.Equal(o.Fee)
}

// keySpace is the UUID namespace of account keys.
var keySpace = uuid.MustParse("0e6c1d5a-8f3b-5e27-b4a9-6a2d7c13f0b8")

// Key is the key of the tenant's account with the id it chose: a UUID
// derived from both (RFC 9562 version 5), so the same id in two tenants
// names two accounts.
func Key(tenantID, accountID string) string {
	return uuid.NewSHA1(keySpace, []byte(tenantID+"\x00"+accountID)).String()
}

// Create stores a new account with its opening balance. Idempotent by the
// tenant's id: the same spec again returns the stored account and created
// false; a different spec under the tenant's id is ACCOUNT_CONFLICT.
func Create(ctx context.Context, db ledger.DBTX, s Spec) (acct Account, created bool, err error) {
	if err := s.Validate(); err != nil {
		return Account{}, false, err
	}
	q := dbsqlc.New(db)
	row, err := q.InsertAccount(ctx, dbsqlc.InsertAccountParams{
		AccountID: s.AccountID, ExternalID: s.External(), TenantID: s.TenantID, Currency: s.Currency,
		OpeningBalance: s.OpeningBalance, LimitBased: s.LimitBased, Fee: s.Fee,
	})
	if err == nil {
		return fromRow(row), true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Account{}, false, fmt.Errorf("account: create %s: %w", s.AccountID, err)
	}
	existing, err := Find(ctx, db, s.TenantID, s.External())
	if ledger.CodeOf(err) == ledger.CodeAccountNotFound {
		// The key is another account's: one the tenant did not create
		// under this id (a key the tenant chose as an id, before ids were
		// scoped to tenants).
		return Account{}, false, ledger.Refuse(ledger.CodeAccountConflict, "account "+s.External()+" cannot be created under this id; use another", nil)
	}
	if err != nil {
		return Account{}, false, err
	}
	if !existing.Spec.Equal(s) {
		return Account{}, false, ledger.Refuse(ledger.CodeAccountConflict,
			"account "+s.External()+" exists with a different currency, opening balance, fee or limit basis", nil)
	}
	return existing, false, nil
}

// Find returns the tenant's account with the id it chose; an empty tenant
// finds the id in any tenant (an operator's call), ACCOUNT_AMBIGUOUS when
// several use it. ACCOUNT_NOT_FOUND when there is none.
func Find(ctx context.Context, db ledger.DBTX, tenantID, externalID string) (Account, error) {
	var tenant *string
	if tenantID != "" {
		tenant = &tenantID
	}
	rows, err := dbsqlc.New(db).FindAccounts(ctx, dbsqlc.FindAccountsParams{ExternalID: externalID, TenantID: tenant})
	switch {
	case err != nil:
		return Account{}, fmt.Errorf("account: find %s: %w", externalID, err)
	case len(rows) == 0:
		return Account{}, notFound(externalID)
	case len(rows) > 1:
		return Account{}, ledger.Refuse(ledger.CodeAccountAmbiguous, "several tenants have an account "+externalID+"; name the tenant",
			map[string]string{"accountId": externalID})
	}
	return fromRow(rows[0]), nil
}

// Get returns an account (ACCOUNT_NOT_FOUND if there is none).
func Get(ctx context.Context, db ledger.DBTX, id string) (Account, error) {
	row, err := dbsqlc.New(db).GetAccount(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Account{}, notFound(id)
	}
	if err != nil {
		return Account{}, fmt.Errorf("account: get %s: %w", id, err)
	}
	return fromRow(row), nil
}

// GetMany returns the accounts of ids that exist, by id, in one query (a
// group's debits).
func GetMany(ctx context.Context, db ledger.DBTX, ids []string) (map[string]Account, error) {
	rows, err := dbsqlc.New(db).GetAccounts(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("account: get %d accounts: %w", len(ids), err)
	}
	out := make(map[string]Account, len(rows))
	for _, r := range rows {
		out[r.AccountID] = fromRow(r)
	}
	return out, nil
}

// Summary is what Phase A needs to know of a debtor account.
type Summary struct {
	// AccountID is the account's key; ExternalID its tenant's id for it.
	AccountID  string          `json:"accountId"`
	ExternalID string          `json:"externalId"`
	TenantID   string          `json:"tenantId"`
	Currency   string          `json:"currency"`
	LimitBased bool            `json:"limitBased"`
	Fee        decimal.Decimal `json:"fee"`
}

// Ref is a tenant's id for an account: what a payment names.
type Ref struct{ TenantID, ExternalID string }

// Lookup returns the summaries of the accounts the tenants' ids name, in
// one query; a ref with no account is absent from the map.
func Lookup(ctx context.Context, db ledger.DBTX, refs []Ref) (map[Ref]Summary, error) {
	// A bulk file names a payroll account a thousand times: ask once.
	seen := make(map[Ref]bool, len(refs))
	var tenants, ids []string
	for _, r := range refs {
		if !seen[r] {
			seen[r] = true
			tenants, ids = append(tenants, r.TenantID), append(ids, r.ExternalID)
		}
	}
	rows, err := dbsqlc.New(db).LookupAccounts(ctx, dbsqlc.LookupAccountsParams{ExternalIds: ids, TenantIds: tenants})
	if err != nil {
		return nil, fmt.Errorf("account: lookup %d accounts: %w", len(ids), err)
	}
	out := make(map[Ref]Summary, len(rows))
	for _, r := range rows {
		out[Ref{r.TenantID, r.ExternalID}] = Summary{AccountID: r.AccountID, ExternalID: r.ExternalID, TenantID: r.TenantID,
			Currency: r.Currency, LimitBased: r.LimitBased, Fee: r.Fee}
	}
	return out, nil
}

func fromRow(r dbsqlc.Account) Account {
	return Account{
		Spec: Spec{
			AccountID: r.AccountID, ExternalID: r.ExternalID, TenantID: r.TenantID, Currency: r.Currency,
			OpeningBalance: r.OpeningBalance, LimitBased: r.LimitBased, Fee: r.Fee,
		},
		Balance: r.Balance, TxnSeq: r.TxnSeq, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func notFound(id string) error {
	return ledger.Refuse(ledger.CodeAccountNotFound, "no account "+id, map[string]string{"accountId": id})
}

// Tenants returns which of the tenants have at least one account: the
// tenants the ledger knows.
func Tenants(ctx context.Context, db ledger.DBTX, tenantIDs []string) (map[string]bool, error) {
	rows, err := dbsqlc.New(db).TenantsWithAccounts(ctx, tenantIDs)
	if err != nil {
		return nil, fmt.Errorf("account: tenants of %d ids: %w", len(tenantIDs), err)
	}
	out := make(map[string]bool, len(rows))
	for _, t := range rows {
		out[t] = true
	}
	return out, nil
}
