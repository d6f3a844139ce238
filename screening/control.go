package screening

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/paydispatch/paydispatch/bankid"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/screening/internal/dbsqlc"
)

// The tenant's rules for a payment the service gave no answer on.
const (
	// RuleHold holds it, HELD "SCREENING: no answer (...)", for an
	// operator to release or cancel: the default.
	RuleHold = "HOLD"
	// RuleReject rejects it.
	RuleReject = "REJECT"
	// RuleAllow lets it go on unscreened (logged and counted).
	RuleAllow = "ALLOW"
)

// Name is the control's name, in logs and Phase A's errors.
const Name = "screening"

// ControlConfig is what a Control runs with.
type ControlConfig struct {
	// Client asks the service.
	Client *Client
	// DB keeps the hits (table screening_hits), so that a retried Phase
	// A reads a payment's hit back.
	DB dbsqlc.DBTX
	// OnError answers a tenant's rule for a payment without an answer:
	// RuleHold, RuleReject or RuleAllow. Nil, an error or another answer:
	// RuleHold, the rule that decides nothing an operator cannot undo.
	OnError func(ctx context.Context, tenantID string) (string, error)
	// Metrics counts the payments without an answer by rule (nil:
	// nothing); the Client counts its calls.
	Metrics *Metrics
	Log     *slog.Logger
}

// Control is the screening hook as a payment.Control: CLEAR passes, HIT
// holds (HELD "SCREENING: <list>: <reason>"), and a payment without an
// answer goes by its tenant's rule.
type Control struct {
	cfg ControlConfig
	q   *dbsqlc.Queries
}

var _ payment.Control = (*Control)(nil)

// NewControl returns the control for cfg.
func NewControl(cfg ControlConfig) (*Control, error) {
	if cfg.Client == nil || cfg.DB == nil {
		return nil, errors.New("screening: a Control needs a Client and a DB")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Control{cfg: cfg, q: dbsqlc.New(cfg.DB)}, nil
}

// Name implements payment.Control.
func (c *Control) Name() string { return Name }

// Check implements payment.Control. A hit kept by an earlier attempt is
// answered again without asking; new hits are kept before the answer is
// given, so Phase A never goes on with a hit it could lose. An error (the
// database, or ctx ended) fails Phase A's attempt, which is retried.
func (c *Control) Check(ctx context.Context, cs []payment.Candidate) ([]payment.Decision, error) {
	keys := make([]string, len(cs))
	for i, cand := range cs {
		keys[i] = cand.Key
	}
	kept, err := c.hits(ctx, keys)
	if err != nil {
		return nil, err
	}
	c.cfg.Metrics.readBack(len(kept))
	var ask []int
	for i, k := range keys {
		if _, ok := kept[k]; !ok {
			ask = append(ask, i)
		}
	}
	results := make([]Result, len(cs))
	if len(ask) > 0 {
		subjects := make([]Subject, len(ask))
		for j, i := range ask {
			subjects[j] = subject(cs[i])
		}
		res, err := c.cfg.Client.Screen(ctx, subjects)
		if err != nil {
			return nil, fmt.Errorf("screening: %w", err)
		}
		var hit dbsqlc.KeepHitsParams
		for j, i := range ask {
			results[i] = res[j]
			if res[j].Verdict == Hit {
				hit.PaymentKeys, hit.Lists, hit.Reasons = append(hit.PaymentKeys, keys[i]), append(hit.Lists, res[j].List), append(hit.Reasons, res[j].Reason)
			}
		}
		if len(hit.PaymentKeys) > 0 {
			if err := c.q.KeepHits(ctx, hit); err != nil {
				return nil, fmt.Errorf("screening: keep %d hits: %w", len(hit.PaymentKeys), err)
			}
			// Another run may have kept an answer first: that one stands.
			if kept, err = c.hits(ctx, hit.PaymentKeys); err != nil {
				return nil, err
			}
		}
	}
	for i, k := range keys {
		if r, ok := kept[k]; ok {
			results[i] = r
		}
	}
	return c.decide(ctx, cs, results), nil
}

func (c *Control) hits(ctx context.Context, keys []string) (map[string]Result, error) {
	rows, err := c.q.Hits(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("screening: read the hits kept of %d payments: %w", len(keys), err)
	}
	out := make(map[string]Result, len(rows))
	for _, r := range rows {
		out[r.PaymentKey] = Result{Verdict: Hit, List: r.List, Reason: r.Reason}
	}
	return out, nil
}

// decide turns the results into decisions, asking a tenant's rule once
// per Check and only when one of its payments has no answer.
func (c *Control) decide(ctx context.Context, cs []payment.Candidate, results []Result) []payment.Decision {
	out := make([]payment.Decision, len(cs))
	rules := map[string]string{}
	for i, r := range results {
		switch r.Verdict {
		case Clear:
		case Hit:
			out[i] = payment.Decision{Action: payment.ActionHold, Reason: HitReason(r.List, r.Reason)}
		default:
			tenant := cs[i].Request.TenantID
			rule, ok := rules[tenant]
			if !ok {
				rule = c.rule(ctx, tenant)
				rules[tenant] = rule
			}
			c.cfg.Metrics.unscreened(rule)
			reason := payment.HoldScreening + ": no answer (" + r.Reason + ")"
			switch rule {
			case RuleReject:
				out[i] = payment.Decision{Action: payment.ActionReject, Reason: reason}
			case RuleAllow:
				c.cfg.Log.Warn("screening: a payment without an answer passes unscreened by its tenant's rule",
					"tenant", tenant, "payment_id", cs[i].Request.PaymentID, "key", cs[i].Key, "why", r.Reason)
			default:
				out[i] = payment.Decision{Action: payment.ActionHold, Reason: reason}
			}
		}
	}
	return out
}

// rule is tenant's rule for a payment without an answer.
func (c *Control) rule(ctx context.Context, tenant string) string {
	if c.cfg.OnError == nil {
		return RuleHold
	}
	rule, err := c.cfg.OnError(ctx, tenant)
	if err != nil {
		c.cfg.Log.Warn("screening: the tenant's rule for no answer could not be read: holding", "tenant", tenant, "err", err)
		return RuleHold
	}
	switch rule {
	case RuleHold, RuleReject, RuleAllow:
		return rule
	}
	c.cfg.Log.Warn("screening: the tenant's rule for no answer is unknown: holding", "tenant", tenant, "rule", plaintext.Clip(rule, 40))
	return RuleHold
}

// HitReason is the status reason of a payment held by a hit.
func HitReason(list, reason string) string {
	s := payment.HoldScreening + ": "
	switch {
	case list == "" && reason == "":
		return s + "hit"
	case list == "":
		return s + reason
	case reason == "":
		return s + list
	}
	return s + list + ": " + reason
}

// subject is what is sent about a candidate.
func subject(c payment.Candidate) Subject {
	r := c.Request
	s := Subject{ID: c.Key, TenantID: r.TenantID, PaymentID: r.PaymentID, DebtorAccount: r.DebtorAccount,
		CreditorName: r.Creditor.Name, CreditorIBAN: bankid.Electronic(r.Creditor.IBAN), CreditorBIC: strings.ToUpper(r.Creditor.BIC),
		Amount: r.Amount, Currency: r.Currency, RemittanceInfo: r.RemittanceInfo}
	if !c.Money.Amount.IsZero() || c.Money.Currency != "" {
		s.Amount, s.Currency = c.Money.Amount.String(), c.Money.Currency
	}
	if len(s.CreditorIBAN) >= 2 {
		s.CreditorCountry = s.CreditorIBAN[:2]
	}
	return s
}
