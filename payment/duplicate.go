package payment

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/bankid"
	"github.com/paydispatch/paydispatch/money"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
)

// DuplicateConfig configures a DuplicateControl.
type DuplicateConfig struct {
	Store *Store
	// Now is the clock the windows are measured by (default time.Now).
	Now func() time.Time
}

// DuplicateControl is the Control that finds suspected duplicates: a
// payment whose debtor account, creditor IBAN, amount, currency and
// execution date (Fingerprint) match an earlier payment of its tenant
// within that payment's window, whatever its id. Its tenant's
// ControlSettings say what it gets: WARN, HOLD, REJECT, or nothing (OFF).
//
// The first payment with a fingerprint owns it in payment_fingerprint
// until its window ends; a chunk claims its payments' fingerprints in one
// statement, so two chunks of a file run at once see one owner between
// them, and a retry of the owner finds its own row and passes.
type DuplicateControl struct {
	cfg DuplicateConfig
}

// NewDuplicateControl returns the control for cfg.
func NewDuplicateControl(cfg DuplicateConfig) *DuplicateControl {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &DuplicateControl{cfg: cfg}
}

// Name is "duplicate".
func (c *DuplicateControl) Name() string { return "duplicate" }

// fingerprintKey is a fingerprint of a tenant's, as a map key.
type fingerprintKey struct {
	tenant string
	sum    [sha256.Size]byte
}

// Fingerprint is what two payments share when one is a suspected
// duplicate of the other: the debtor account, the creditor's IBAN
// (electronic form), the amount (its value: 100 and 100.00 are one), the
// currency and the execution date, the requested execution time's date
// in UTC. UTC and not the rail's business date: it is known at intake,
// before any routing, and a payment rolled past a cut-off is still the
// payment the tenant sent.
//
// It is the SHA-256 of the fields, each followed by a zero byte, after
// "v1": stored fingerprints compare with new ones, so the bytes never
// change. They are joined in a buffer on the stack and hashed at once
// (a file's handler and its Phase A take every payment's).
func Fingerprint(r Request, amount decimal.Decimal) [sha256.Size]byte {
	var buf [256]byte
	b := buf[:0]
	for _, s := range [...]string{"v1", r.DebtorAccount, bankid.Electronic(r.Creditor.IBAN), money.String(amount), strings.ToUpper(r.Currency)} {
		b = append(append(b, s...), 0)
	}
	b = append(r.RequestedExecutionTime.UTC().AppendFormat(b, time.DateOnly), 0)
	return sha256.Sum256(b)
}

// duplicateReason is the status reason of a suspected duplicate of the
// tenant's payment earlier: a hold's and a rejection's begin with
// HoldDuplicate, a warning's says it is only suspected.
func duplicateReason(a DuplicateAction, earlier string) string {
	if a == DuplicateWarn {
		return HoldDuplicate + " suspected: like " + earlier
	}
	return HoldDuplicate + ": like " + earlier
}

// decision is the Decision the action makes of a suspected duplicate of
// earlier.
func (a DuplicateAction) decision(earlier string) Decision {
	d := Decision{Reason: duplicateReason(a, earlier)}
	switch a {
	case DuplicateWarn:
		d.Action = ActionWarn
	case DuplicateHold:
		d.Action = ActionHold
	case DuplicateReject:
		d.Action = ActionReject
	default:
		return Decision{}
	}
	return d
}

// Check claims the candidates' fingerprints in one statement and
// decides on each: a payment that owns its fingerprint (just now, or in
// an earlier attempt) passes; the others are duplicates of the owner, or,
// within the chunk, of the first candidate with their fingerprint.
func (c *DuplicateControl) Check(ctx context.Context, cs []Candidate) ([]Decision, error) {
	out := make([]Decision, len(cs))
	if len(cs) == 0 {
		return out, nil
	}
	settings, err := c.cfg.Store.ControlSettings(ctx, tenantsOf(cs))
	if err != nil {
		return nil, err
	}
	now := c.cfg.Now().UTC()
	// The candidates by fingerprint, in the chunk's order: the first
	// claims it for them all.
	groups := map[fingerprintKey][]int{}
	var order []fingerprintKey
	for i, cand := range cs {
		if settings[cand.Request.TenantID].DuplicateAction == DuplicateOff {
			continue
		}
		k := fingerprintKey{tenant: cand.Request.TenantID, sum: Fingerprint(cand.Request, cand.Money.Amount)}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	if len(order) == 0 {
		return out, nil
	}
	p := dbsqlc.ClaimFingerprintsParams{ReceivedAt: now}
	for _, k := range order {
		first := cs[groups[k][0]]
		p.TenantIds = append(p.TenantIds, k.tenant)
		p.Fingerprints = append(p.Fingerprints, k.sum[:])
		p.PaymentIds = append(p.PaymentIds, first.Key)
		p.ExternalIds = append(p.ExternalIds, first.Request.PaymentID)
		p.ExpiresAt = append(p.ExpiresAt, now.Add(settings[k.tenant].DuplicateWindow()))
	}
	rows, err := c.cfg.Store.q.ClaimFingerprints(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("payment: claim the fingerprints of %d payments: %w", len(order), err)
	}
	owners := make(map[fingerprintKey]dbsqlc.ClaimFingerprintsRow, len(rows))
	for _, r := range rows {
		owners[fingerprintKey{tenant: r.TenantID, sum: [sha256.Size]byte(r.Fingerprint)}] = r
	}
	for _, k := range order {
		g := groups[k]
		action := settings[k.tenant].DuplicateAction
		earlier := cs[g[0]].Request.PaymentID
		if o, ok := owners[k]; ok && o.PaymentID != cs[g[0]].Key {
			// Another payment owns it: the whole group is like that one.
			earlier = o.ExternalID
			out[g[0]] = action.decision(earlier)
		}
		for _, i := range g[1:] {
			out[i] = action.decision(earlier)
		}
	}
	return out, nil
}

// Suspect is a request that looks like an earlier payment of its tenant.
type Suspect struct {
	// Index is the request's place in the requests asked about;
	// PaymentID its id.
	Index     int
	PaymentID string
	// Like is the tenant's id of the earlier payment: one taken in
	// before, or an earlier request among those asked about (then
	// LikeIndex is its place, else -1).
	Like      string
	LikeIndex int
	// Action is what Phase A will do with it (the tenant's
	// DuplicateAction; never OFF).
	Action DuplicateAction
}

// SuspectedDuplicates answers which of the requests look like an earlier
// payment of their tenant, among the requests themselves or the payments
// whose windows are still open, in one read-only query: the intake lists
// them in its answer (a 202) before Phase A decides. A request whose
// amount cannot be read is skipped (Phase A refuses it); a request that
// is a replay of the earlier payment (the same id) is not a suspect.
func (s *Service) SuspectedDuplicates(ctx context.Context, reqs []Request) ([]Suspect, error) {
	type seen struct {
		index int
		key   string
	}
	keys := make([]fingerprintKey, len(reqs))
	ok := make([]bool, len(reqs))
	paymentKeys := make([]string, len(reqs))
	first := map[fingerprintKey]seen{}
	var p dbsqlc.DuplicateLookupParams
	for i, r := range reqs {
		amount, err := money.ParseDecimal(r.Amount, money.Unsigned)
		if err != nil {
			continue
		}
		k := fingerprintKey{tenant: r.TenantID, sum: Fingerprint(r, amount)}
		keys[i], ok[i], paymentKeys[i] = k, true, Key(r.TenantID, r.PaymentID)
		if _, dup := first[k]; dup {
			continue
		}
		first[k] = seen{index: i, key: paymentKeys[i]}
		p.TenantIds = append(p.TenantIds, k.tenant)
		p.Fingerprints = append(p.Fingerprints, k.sum[:])
	}
	if len(p.TenantIds) == 0 {
		return nil, nil
	}
	p.Now, p.DefaultAction = s.now().UTC(), string(DefaultControlSettings.DuplicateAction)
	rows, err := s.cfg.Store.q.DuplicateLookup(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("payment: look for duplicates of %d payments: %w", len(p.TenantIds), err)
	}
	type found struct {
		action      DuplicateAction
		owner, like string
	}
	byKey := make(map[fingerprintKey]found, len(rows))
	for _, r := range rows {
		byKey[fingerprintKey{tenant: r.TenantID, sum: [sha256.Size]byte(r.Fingerprint)}] = found{
			action: DuplicateAction(r.Action), owner: r.PaymentID, like: r.ExternalID}
	}
	var out []Suspect
	for i, r := range reqs {
		if !ok[i] {
			continue
		}
		f := byKey[keys[i]]
		if f.action == DuplicateOff || f.action == "" {
			continue
		}
		key := paymentKeys[i]
		switch fst := first[keys[i]]; {
		case f.owner == key: // the earlier payment itself, sent again
		case f.owner != "":
			out = append(out, Suspect{Index: i, PaymentID: r.PaymentID, Like: f.like, LikeIndex: -1, Action: f.action})
		case fst.index != i && fst.key != key:
			out = append(out, Suspect{Index: i, PaymentID: r.PaymentID, Like: reqs[fst.index].PaymentID, LikeIndex: fst.index, Action: f.action})
		}
	}
	return out, nil
}

// DeleteFingerprints deletes up to limit fingerprints whose windows
// ended before before, and answers how many: payment_fingerprint's
// retention (package retention calls it). An expired fingerprint
// matches nothing, so deleting it changes no answer.
func DeleteFingerprints(ctx context.Context, db DB, before time.Time, limit int) (int64, error) {
	n, err := dbsqlc.New(db).DeleteFingerprints(ctx, dbsqlc.DeleteFingerprintsParams{Before: before, MaxRows: int32(min(max(limit, 1), 10_000))})
	if err != nil {
		return n, fmt.Errorf("payment: delete fingerprints: %w", err)
	}
	return n, nil
}
