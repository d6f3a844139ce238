package routing

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/field"
)

// The sources a payment comes from, as rules match them.
const (
	SourceAPI   = "API"
	SourceFile  = "FILE"
	SourceKafka = "KAFKA"
)

// Rule routes the payments it matches to its rail. An empty matcher
// matches anything; the amount bounds are in the payment's currency and
// included.
type Rule struct {
	TenantID  string
	Currency  string
	MinAmount *decimal.Decimal
	MaxAmount *decimal.Decimal
	Source    string
	Rail      string
}

// MaxRules bounds the routing table: it is read whole for every intake.
const MaxRules = 1000

// Payment is what routing needs of a payment.
type Payment struct {
	TenantID string
	Currency string
	Amount   decimal.Decimal
	Source   string
	// Rail is the rail the payment names itself; empty: the rules choose.
	Rail string
}

// Matches reports whether the rule routes p.
func (r Rule) Matches(p Payment) bool {
	return (r.TenantID == "" || r.TenantID == p.TenantID) &&
		(r.Currency == "" || r.Currency == p.Currency) &&
		(r.MinAmount == nil || !p.Amount.LessThan(*r.MinAmount)) &&
		(r.MaxAmount == nil || !p.Amount.GreaterThan(*r.MaxAmount)) &&
		(r.Source == "" || r.Source == p.Source)
}

var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

// ValidateRules lists what is wrong with an ordered routing table,
// rules[i]'s fields named by their index.
func ValidateRules(rules []Rule) error {
	var errs []field.Error
	add := func(i int, f, format string, args ...any) {
		errs = append(errs, field.Error{Field: fmt.Sprintf("rules[%d].%s", i, f), Detail: fmt.Sprintf(format, args...)})
	}
	if len(rules) > MaxRules {
		return invalid(field.Error{Field: "rules", Detail: fmt.Sprintf("want at most %d rules", MaxRules)})
	}
	for i, r := range rules {
		if !ValidName(r.Rail) {
			add(i, "rail", "want the name of a rail")
		}
		if r.TenantID != "" && !field.ValidID(r.TenantID) {
			add(i, "tenantId", "want a tenant id, or none for any tenant")
		}
		if r.Currency != "" && !currencyCode.MatchString(r.Currency) {
			add(i, "currency", "want an ISO 4217 code such as EUR, or none for any")
		}
		switch r.Source {
		case "", SourceAPI, SourceFile, SourceKafka:
		default:
			add(i, "source", "want API, FILE or KAFKA, or none for any")
		}
		if r.MinAmount != nil && r.MinAmount.IsNegative() {
			add(i, "minAmount", "want an amount of 0 or more")
		}
		if r.MinAmount != nil && r.MaxAmount != nil && r.MaxAmount.LessThan(*r.MinAmount) {
			add(i, "maxAmount", "want an amount of at least minAmount")
		}
	}
	if len(errs) > 0 {
		return invalid(errs...)
	}
	return nil
}

// CutoffRule is what happens to a payment that cannot reach its rail
// before the cut-off of its execution date.
type CutoffRule string

const (
	// Roll gives it a slot from the next business day's opening.
	Roll CutoffRule = "ROLL"
	// Hold sets it aside, HELD, for an operator to release or cancel.
	Hold CutoffRule = "HOLD"
	// Reject refuses it (CUTOFF_MISSED); no money moves.
	Reject CutoffRule = "REJECT"
)

// DefaultCutoffRule is a tenant's rule until one is set.
const DefaultCutoffRule = Roll

// ParseCutoffRule reads ROLL, HOLD or REJECT, in any case.
func ParseCutoffRule(s string) (CutoffRule, error) {
	switch r := CutoffRule(strings.ToUpper(s)); r {
	case Roll, Hold, Reject:
		return r, nil
	}
	return "", invalid(field.Error{Field: "rule", Detail: "want ROLL, HOLD or REJECT"})
}
