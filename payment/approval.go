package payment

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/money"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/routing"
)

// ApprovalRule is one of a tenant's ordered approval rules (four eyes):
// a payment it matches needs Approvals approvals from principals other
// than its submitter before it takes a slot. Each criterion left empty
// matches anything; the first rule that matches decides.
type ApprovalRule struct {
	Name string `json:"name"`
	// MinAmount matches a payment of at least this amount (in its own
	// currency: name Currency to compare like with like).
	MinAmount string `json:"minAmount,omitempty"`
	Currency  string `json:"currency,omitempty"`
	// Source is API, FILE or KAFKA.
	Source        string `json:"source,omitempty"`
	DebtorAccount string `json:"debtorAccount,omitempty"`
	Rail          string `json:"rail,omitempty"`
	// FileMinTotal and FileMinCount match every payment of a file whose
	// tenant's payments in it total at least FileMinTotal (in the
	// payment's currency) or number at least FileMinCount; only payments
	// from a file (source FILE) match them.
	FileMinTotal string `json:"fileMinTotal,omitempty"`
	FileMinCount int    `json:"fileMinCount,omitempty"`
	Approvals    int    `json:"approvals"`
}

// The bounds of a tenant's rules.
const (
	MaxApprovalRules = 100
	MaxApprovals     = 10
)

// ReasonApproval begins the status reason of a payment awaiting its
// approvals.
const ReasonApproval = "APPROVAL"

var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

// ValidateApprovalRules lists what is wrong with a tenant's rules,
// rules[i]'s fields named by their index (a *field.Invalid).
func ValidateApprovalRules(rules []ApprovalRule) error {
	var errs []field.Error
	add := func(i int, f, format string, args ...any) {
		errs = append(errs, field.Error{Field: fmt.Sprintf("rules[%d].%s", i, f), Detail: fmt.Sprintf(format, args...)})
	}
	if len(rules) > MaxApprovalRules {
		return &field.Invalid{What: "invalid approval rules", Fields: []field.Error{{Field: "rules", Detail: fmt.Sprintf("want at most %d rules", MaxApprovalRules)}}}
	}
	names := map[string]int{}
	for i, r := range rules {
		switch {
		case r.Name == "" || len(r.Name) > 64 || !plaintext.Valid(r.Name):
			add(i, "name", "want a name of 1 to 64 characters of text")
		default:
			if j, dup := names[r.Name]; dup {
				add(i, "name", "also the name of rules[%d]: each rule's name is its own", j)
			}
			names[r.Name] = i
		}
		if r.Approvals < 1 || r.Approvals > MaxApprovals {
			add(i, "approvals", "want 1 to %d approvals", MaxApprovals)
		}
		for _, d := range []struct{ name, v string }{{"minAmount", r.MinAmount}, {"fileMinTotal", r.FileMinTotal}} {
			if d.v == "" {
				continue
			}
			if _, err := money.ParseDecimal(d.v, money.Unsigned); err != nil {
				add(i, d.name, "want a decimal amount of 0 or more, as a string such as \"10000.00\"")
			}
		}
		if r.Currency != "" && !currencyCode.MatchString(r.Currency) {
			add(i, "currency", "want an ISO 4217 code such as EUR, or none for any")
		}
		switch r.Source {
		case "", routing.SourceAPI, routing.SourceFile, routing.SourceKafka:
		default:
			add(i, "source", "want API, FILE or KAFKA, or none for any")
		}
		if r.DebtorAccount != "" && (len(r.DebtorAccount) > 64 || !plaintext.Valid(r.DebtorAccount)) {
			add(i, "debtorAccount", "want an account id of at most 64 characters, or none for any")
		}
		if r.Rail != "" && !routing.ValidName(r.Rail) {
			add(i, "rail", "want the name of a rail, or none for any")
		}
		if r.FileMinCount < 0 {
			add(i, "fileMinCount", "want 1 or more, or none")
		}
		if (r.FileMinTotal != "" || r.FileMinCount > 0) && r.Source != "" && r.Source != routing.SourceFile {
			add(i, "source", "a rule on a file's total or count matches only files: FILE, or none")
		}
	}
	if len(errs) > 0 {
		return &field.Invalid{What: "invalid approval rules", Fields: errs}
	}
	return nil
}

// PutApprovalRules replaces a tenant's rules (none: no payment of its
// needs approvals), in tx when given (an audited change's), after
// ValidateApprovalRules. They apply to the payments taken in from then.
func (s *Store) PutApprovalRules(ctx context.Context, tx pgx.Tx, tenant string, rules []ApprovalRule) error {
	if !field.ValidID(tenant) {
		return &field.Invalid{What: "invalid approval rules", Fields: []field.Error{{Field: "tenantId", Detail: field.IDRule}}}
	}
	if err := ValidateApprovalRules(rules); err != nil {
		return err
	}
	put := func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		if err := q.DeleteApprovalRules(ctx, tenant); err != nil {
			return fmt.Errorf("payment: approval rules of %s: %w", tenant, err)
		}
		p := dbsqlc.InsertApprovalRulesParams{TenantID: tenant}
		for i, r := range rules {
			p.Positions, p.Names, p.MinAmounts = append(p.Positions, int32(i)), append(p.Names, r.Name), append(p.MinAmounts, r.MinAmount)
			p.Currencies, p.Sources, p.DebtorAccounts = append(p.Currencies, r.Currency), append(p.Sources, r.Source), append(p.DebtorAccounts, r.DebtorAccount)
			p.Rails, p.FileMinTotals, p.FileMinCounts = append(p.Rails, r.Rail), append(p.FileMinTotals, r.FileMinTotal), append(p.FileMinCounts, int32(r.FileMinCount))
			p.Approvals = append(p.Approvals, int32(r.Approvals))
		}
		if len(rules) == 0 {
			return nil
		}
		if err := q.InsertApprovalRules(ctx, p); err != nil {
			return fmt.Errorf("payment: approval rules of %s: %w", tenant, err)
		}
		return nil
	}
	if tx != nil {
		return put(tx)
	}
	return pgx.BeginFunc(ctx, s.db, put)
}

// ApprovalRules are a tenant's rules, in their order.
func (s *Store) ApprovalRules(ctx context.Context, tenant string) ([]ApprovalRule, error) {
	byTenant, err := s.approvalRules(ctx, []string{tenant})
	if err != nil {
		return nil, err
	}
	out := make([]ApprovalRule, len(byTenant[tenant]))
	for i, r := range byTenant[tenant] {
		out[i] = r.ApprovalRule
	}
	return out, nil
}

// approvalRule is a stored rule with its amounts read.
type approvalRule struct {
	ApprovalRule
	minAmount, fileMinTotal *decimal.Decimal
}

func (s *Store) approvalRules(ctx context.Context, tenants []string) (map[string][]approvalRule, error) {
	rows, err := s.q.ApprovalRules(ctx, tenants)
	if err != nil {
		return nil, fmt.Errorf("payment: approval rules: %w", err)
	}
	out := map[string][]approvalRule{}
	for _, row := range rows {
		r := approvalRule{ApprovalRule: ApprovalRule{Name: row.Name, Currency: deref(row.Currency), Source: deref(row.Source),
			DebtorAccount: deref(row.DebtorAccount), Rail: deref(row.Rail), Approvals: int(row.Approvals)},
			minAmount: row.MinAmount, fileMinTotal: row.FileMinTotal}
		if row.MinAmount != nil {
			r.MinAmount = row.MinAmount.String()
		}
		if row.FileMinTotal != nil {
			r.FileMinTotal = row.FileMinTotal.String()
		}
		if row.FileMinCount != nil {
			r.FileMinCount = int(*row.FileMinCount)
		}
		out[row.TenantID] = append(out[row.TenantID], r)
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// fileFacts are what a file's rules compare: each tenant's payments in
// it, their count and their total by currency.
type fileFacts struct {
	counts map[string]int
	totals map[[2]string]decimal.Decimal
}

func factsOf(reqs []Request, amounts []decimal.Decimal) *fileFacts {
	f := &fileFacts{counts: map[string]int{}, totals: map[[2]string]decimal.Decimal{}}
	for i, r := range reqs {
		f.counts[r.TenantID]++
		k := [2]string{r.TenantID, r.Currency}
		f.totals[k] = f.totals[k].Add(amounts[i])
	}
	return f
}

// matches reports whether the rule takes the payment, from source, with
// its file's facts (nil: not from a file).
func (r approvalRule) matches(req Request, amount decimal.Decimal, source string, file *fileFacts) bool {
	switch {
	case r.minAmount != nil && amount.LessThan(*r.minAmount),
		r.Currency != "" && r.Currency != req.Currency,
		r.Source != "" && r.Source != source,
		r.DebtorAccount != "" && r.DebtorAccount != req.DebtorAccount,
		r.Rail != "" && r.Rail != req.Rail:
		return false
	}
	if r.fileMinTotal == nil && r.FileMinCount == 0 {
		return true
	}
	if file == nil {
		return false
	}
	// Either fact of the file is enough: a file of many small payments
	// and one of a few large ones both want a second pair of eyes.
	if r.fileMinTotal != nil && !file.totals[[2]string{req.TenantID, req.Currency}].LessThan(*r.fileMinTotal) {
		return true
	}
	return r.FileMinCount > 0 && file.counts[req.TenantID] >= r.FileMinCount
}

// approvalNeed is a payment's requirement: set at intake by the first
// rule of its tenant that matches it, stored with its id's claim
// (Receive). It is not part of the payment: a replay is not told from
// the first by it.
type approvalNeed struct {
	rule      string
	approvals int
	submitter string
}

// submitterOf is the principal a request comes from ("" for none: no
// authentication, or an intake with no caller such as Kafka).
func submitterOf(ctx context.Context) string {
	if p, ok := auth.FromContext(ctx); ok {
		return p.TokenID
	}
	return ""
}

// applyApprovalRules sets, on each valid request, the requirement of the
// first of its tenant's approval rules that matches it, from source and
// submitted by principal; a FILE's requests are one file.
func (s *Service) applyApprovalRules(ctx context.Context, source, principal string, reqs []Request) error {
	if len(reqs) == 0 {
		return nil
	}
	rules, err := s.cfg.Store.approvalRules(ctx, tenantsOf(reqs))
	if err != nil || len(rules) == 0 {
		return err
	}
	amounts := make([]decimal.Decimal, len(reqs))
	for i, r := range reqs {
		// Receive refuses an amount Validate did not pass; here it
		// matches nothing.
		amounts[i], _ = money.ParseDecimal(r.Amount, money.Unsigned)
	}
	var file *fileFacts
	if source == routing.SourceFile {
		file = factsOf(reqs, amounts)
	}
	for i := range reqs {
		reqs[i].approval = nil
		for _, rule := range rules[reqs[i].TenantID] {
			if rule.matches(reqs[i], amounts[i], source, file) {
				reqs[i].approval = &approvalNeed{rule: rule.Name, approvals: rule.Approvals, submitter: principal}
				break
			}
		}
	}
	return nil
}

// storeApprovalNeeds stores the requirements of the payments claimed now
// (fresh[i]), in the transaction that claims them.
func storeApprovalNeeds(ctx context.Context, q *dbsqlc.Queries, rs []Request, keys []string, fresh []bool) error {
	var p dbsqlc.InsertApprovalRequirementsParams
	for i, r := range rs {
		if r.approval == nil || !fresh[i] {
			continue
		}
		p.PaymentIds, p.TenantIds = append(p.PaymentIds, keys[i]), append(p.TenantIds, r.TenantID)
		p.Rules, p.Approvals, p.Submitters = append(p.Rules, r.approval.rule), append(p.Approvals, int32(r.approval.approvals)), append(p.Submitters, r.approval.submitter)
	}
	if len(p.PaymentIds) == 0 {
		return nil
	}
	if err := q.InsertApprovalRequirements(ctx, p); err != nil {
		return fmt.Errorf("payment: approval requirements of %d payments: %w", len(p.PaymentIds), err)
	}
	return nil
}

// approvalReason is the status reason of a payment still short of its
// approvals.
func approvalReason(approved, needed int, rule string) string {
	return fmt.Sprintf("%s: %d of %d approvals (rule %s)", ReasonApproval, approved, needed, rule)
}

// ApprovalControl is Phase A's control of the approval rules: a payment
// whose requirement is not met awaits its approvals (AWAITING_APPROVAL),
// taking no slot.
type ApprovalControl struct{ store *Store }

// NewApprovalControl returns the control reading requirements from store.
func NewApprovalControl(store *Store) *ApprovalControl { return &ApprovalControl{store: store} }

// Name is the control's name.
func (*ApprovalControl) Name() string { return "approvals" }

// Check answers AWAITING_APPROVAL for each candidate whose approvals are
// missing; the requirement and approvals are read from the database, so
// a retry answers the same.
func (c *ApprovalControl) Check(ctx context.Context, cs []Candidate) ([]Decision, error) {
	keys := make([]string, len(cs))
	for i, cand := range cs {
		keys[i] = cand.Key
	}
	states, err := c.store.q.ApprovalStates(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("payment: approval states: %w", err)
	}
	byKey := make(map[string]dbsqlc.ApprovalStatesRow, len(states))
	for _, st := range states {
		byKey[st.PaymentID] = st
	}
	out := make([]Decision, len(cs))
	for i, k := range keys {
		st, ok := byKey[k]
		switch {
		case !ok:
		case st.Denied:
			out[i] = Decision{Action: ActionReject, Reason: "DENIED: an approver denied it"}
		case st.Approved < st.Needed:
			out[i] = Decision{Action: ActionAwaitApproval, Reason: approvalReason(int(st.Approved), int(st.Needed), st.Rule)}
		}
	}
	return out, nil
}

// ErrOwnPayment: a principal may not approve or deny a payment it
// submitted.
var ErrOwnPayment = errors.New("payment: the submitter of a payment never approves or denies it")

// ErrNoApprover: an approval names no principal.
var ErrNoApprover = errors.New("payment: an approval needs a principal")

// PutApprovalRules replaces a tenant's approval rules (Store's).
func (s *Service) PutApprovalRules(ctx context.Context, tx pgx.Tx, tenant string, rules []ApprovalRule) error {
	return s.cfg.Store.PutApprovalRules(ctx, tx, tenant, rules)
}

// ApprovalRules are a tenant's approval rules (Store's).
func (s *Service) ApprovalRules(ctx context.Context, tenant string) ([]ApprovalRule, error) {
	return s.cfg.Store.ApprovalRules(ctx, tenant)
}
