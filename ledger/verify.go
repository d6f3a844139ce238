package ledger

import (
	"context"
	"fmt"

	"github.com/paydispatch/paydispatch/ledger/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/money"
)

// Rule names one invariant of the ledger.
type Rule string

// The rules Verify checks.
const (
	// opening balance + credits - debits = balance; txn_seq counts them.
	RuleBalanceEquation Rule = "balance_equation"
	// Each balance_after follows from the one before; seq has no gaps.
	RuleBalanceChain Rule = "balance_chain"
	// No balance of an account that is not limit-based below zero.
	RuleNonNegative Rule = "non_negative_balance"
	// A reversal reverses an existing transaction of its account, of the
	// same amount, once.
	RuleReversal Rule = "reversal"
	// A window's utilization is the sum of its bookings not reversed.
	RuleLimitUtilization Rule = "limit_utilization"
	// A window's utilization never exceeds its limit.
	RuleLimitWithin Rule = "limit_within_limit"
	// An UNWOUND contract has its unwind record.
	RuleFXUnwindRecord Rule = "fx_unwind_record"
	// Amounts that must be positive are.
	RulePositiveAmount Rule = "positive_amount"
	// Amounts are within their currency's minor units.
	RuleMinorUnits Rule = "minor_units"
)

// Violation is one row that breaks one rule.
type Violation struct {
	Rule Rule `json:"rule"`
	// Row names the row: its table and key.
	Row    string `json:"row"`
	Detail string `json:"detail"`
}

func (v Violation) String() string { return string(v.Rule) + ": " + v.Row + ": " + v.Detail }

// Verify checks the ledger's invariants on a live database and returns
// every violation found (none: the ledger is consistent). Each rule is one
// statement, so it sees one snapshot: postings running meanwhile are seen
// whole or not at all.
func Verify(ctx context.Context, db DBTX) ([]Violation, error) {
	q := dbsqlc.New(db)
	var out []Violation
	add := func(rule Rule, ref, detail string) {
		out = append(out, Violation{Rule: rule, Row: ref, Detail: detail})
	}

	eq, err := q.BalanceEquation(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: verify %s: %w", RuleBalanceEquation, err)
	}
	for _, r := range eq {
		add(RuleBalanceEquation, r.RowRef, r.Detail)
	}
	chain, err := q.BalanceChain(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: verify %s: %w", RuleBalanceChain, err)
	}
	for _, r := range chain {
		add(RuleBalanceChain, r.RowRef, r.Detail)
	}
	neg, err := q.NegativeBalances(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: verify %s: %w", RuleNonNegative, err)
	}
	for _, r := range neg {
		add(RuleNonNegative, r.RowRef, r.Detail)
	}
	rev, err := q.Reversals(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: verify %s: %w", RuleReversal, err)
	}
	for _, r := range rev {
		add(RuleReversal, r.RowRef, r.Detail)
	}
	util, err := q.LimitUtilization(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: verify %s: %w", RuleLimitUtilization, err)
	}
	for _, r := range util {
		add(RuleLimitUtilization, r.RowRef, r.Detail)
	}
	within, err := q.LimitWithin(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: verify %s: %w", RuleLimitWithin, err)
	}
	for _, r := range within {
		add(RuleLimitWithin, r.RowRef, r.Detail)
	}
	fx, err := q.FXUnwindRecord(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: verify %s: %w", RuleFXUnwindRecord, err)
	}
	for _, r := range fx {
		add(RuleFXUnwindRecord, r.RowRef, r.Detail)
	}
	amounts, err := verifyAmounts(ctx, q)
	if err != nil {
		return nil, err
	}
	return append(out, amounts...), nil
}

// verifyAmounts hands the database the minor units of the currencies in
// use (SQL does not know them) and checks every amount against them.
func verifyAmounts(ctx context.Context, q *dbsqlc.Queries) ([]Violation, error) {
	codes, err := q.Currencies(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: verify amounts: currencies: %w", err)
	}
	digits := make([]int32, len(codes))
	for i, c := range codes {
		d, ok := money.MinorUnits(c)
		if !ok {
			d = -1
		}
		digits[i] = d
	}
	rows, err := q.Amounts(ctx, dbsqlc.AmountsParams{Currencies: codes, Digits: digits})
	if err != nil {
		return nil, fmt.Errorf("ledger: verify amounts: %w", err)
	}
	var out []Violation
	for _, r := range rows {
		if !r.PositiveOk {
			out = append(out, Violation{Rule: RulePositiveAmount, Row: r.RowRef, Detail: r.Detail + " is not positive"})
		}
		if !r.MinorUnitsOk {
			out = append(out, Violation{Rule: RuleMinorUnits, Row: r.RowRef, Detail: r.Detail})
		}
	}
	return out, nil
}
