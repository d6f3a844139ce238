package payment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paydispatch/paydispatch/internal/ptr"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
)

// ListFilter selects a tenant's payments for List. TenantID is required;
// the rest narrow it (zero: no filter).
type ListFilter struct {
	TenantID      string
	Status        Status
	BatchID       string
	DebtorAccount string
	// Rail: the payments leaving by that rail.
	Rail string
	// Priority: the payments of that priority.
	Priority Priority
	// Requested in [RequestedFrom, RequestedTo).
	RequestedFrom, RequestedTo time.Time
}

// ListPage is a page of a list: its payments, and where the next page
// starts ("" after the last).
type ListPage struct {
	Payments []View
	Next     string
}

// ErrBadPosition: a list was asked to start at a position it did not
// give.
var ErrBadPosition = errors.New("payment: not a position of this list")

// The bounds of a requested time when a filter (a list's, a cancel's)
// leaves them open.
var (
	openFrom = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	openTo   = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
)

// maxListScan bounds the rows a page reads when a filter is applied
// beside its index (a status and a debtor account, or a file with
// either): a page may then come back short, with Next where the reading
// stopped, so no request reads a tenant's whole history.
const maxListScan = 10_000

// List returns up to limit of the tenant's payments that the filter
// selects, newest first — by requested execution time, then in the
// order Phase A stored them, latest first — after the position a
// previous page returned ("" for the first page). A file's payments
// (BatchID) come last line first. Each filter is read through an index
// that gives its rows in that order. Payments taken in but not yet
// stored by Phase A (RECEIVED, seconds after intake) are not listed:
// GET /v1/payments/{id} and the file's progress show them.
func (s *Service) List(ctx context.Context, f ListFilter, after string, limit int) (ListPage, error) {
	if f.TenantID == "" {
		return ListPage{}, errors.New("payment: list: a tenant is required")
	}
	if f.RequestedFrom.IsZero() {
		f.RequestedFrom = openFrom
	}
	if f.RequestedTo.IsZero() {
		f.RequestedTo = openTo
	}
	if f.BatchID != "" {
		return s.listBatch(ctx, f, after, limit)
	}
	pos, err := parseListPosition(after)
	if err != nil {
		return ListPage{}, err
	}
	budget := limit + 1
	if f.Status != "" && f.DebtorAccount != "" || f.Rail != "" || f.Priority != "" { // a filter beside the index
		budget = min(max(10*limit, 1000), maxListScan)
	}
	q := s.cfg.Store.q
	var scanned []listed
	switch {
	case f.DebtorAccount != "":
		rows, err := q.ListByDebtor(ctx, dbsqlc.ListByDebtorParams{TenantID: f.TenantID, DebtorAccount: f.DebtorAccount, Status: string(f.Status), Rail: f.Rail, Priority: string(f.Priority),
			RequestedFrom: f.RequestedFrom, RequestedTo: f.RequestedTo, AfterRequested: pos.requested, AfterSeq: pos.seq,
			Budget: int32(budget)})
		if err != nil {
			return ListPage{}, fmt.Errorf("payment: list: %w", err)
		}
		for _, r := range rows {
			scanned = append(scanned, listed{r.PaymentID, listPosition{r.RequestedExecutionTime, r.ListSeq}, r.Hit})
		}
	case f.Status != "":
		rows, err := q.ListByStatus(ctx, dbsqlc.ListByStatusParams{TenantID: f.TenantID, Status: string(f.Status), Rail: f.Rail, Priority: string(f.Priority),
			RequestedFrom: f.RequestedFrom, RequestedTo: f.RequestedTo, AfterRequested: pos.requested, AfterSeq: pos.seq,
			Budget: int32(budget)})
		if err != nil {
			return ListPage{}, fmt.Errorf("payment: list: %w", err)
		}
		for _, r := range rows {
			scanned = append(scanned, listed{r.PaymentID, listPosition{r.RequestedExecutionTime, r.ListSeq}, r.Hit})
		}
	default:
		rows, err := q.ListByTenant(ctx, dbsqlc.ListByTenantParams{TenantID: f.TenantID, Rail: f.Rail, Priority: string(f.Priority),
			RequestedFrom: f.RequestedFrom, RequestedTo: f.RequestedTo, AfterRequested: pos.requested, AfterSeq: pos.seq,
			Budget: int32(budget)})
		if err != nil {
			return ListPage{}, fmt.Errorf("payment: list: %w", err)
		}
		for _, r := range rows {
			scanned = append(scanned, listed{r.PaymentID, listPosition{r.RequestedExecutionTime, r.ListSeq}, r.Hit})
		}
	}
	var keys []string
	last := -1 // the last scanned row shown
	for i, r := range scanned {
		if r.hit && len(keys) < limit {
			keys, last = append(keys, r.key), i
		}
	}
	next := ""
	switch {
	case len(keys) == limit && (last < len(scanned)-1 || len(scanned) == budget):
		next = scanned[last].pos.String()
	case len(keys) < limit && len(scanned) == budget:
		next = scanned[len(scanned)-1].pos.String() // the reading stopped before the page filled
	}
	// The index applied the filters: the rows are read by key alone.
	views, err := s.listed(ctx, ListFilter{TenantID: f.TenantID, RequestedFrom: openFrom, RequestedTo: openTo}, keys)
	if err != nil {
		return ListPage{}, err
	}
	out := make([]View, len(views))
	for i, v := range views {
		out[i] = v.View
	}
	return ListPage{Payments: out, Next: next}, nil
}

// listed is one row a page read: its key, its place, and whether it
// passed the filters beside the index.
type listed struct {
	key string
	pos listPosition
	hit bool
}

// listPosition is a payment's place in a tenant's list: its requested
// execution time, and its number in the order payments are stored.
type listPosition struct {
	requested time.Time
	seq       int64
}

// String is the position as List returns it: the time in Unix
// microseconds, and the number.
func (p listPosition) String() string {
	return "t" + strconv.FormatInt(p.requested.UnixMicro(), 10) + "." + strconv.FormatInt(p.seq, 10)
}

func parseListPosition(s string) (listPosition, error) {
	if s == "" {
		return listPosition{requested: openTo, seq: math.MaxInt64}, nil
	}
	body, ok := strings.CutPrefix(s, "t")
	r, q, found := strings.Cut(body, ".")
	micros, err1 := strconv.ParseInt(r, 10, 64)
	seq, err2 := strconv.ParseInt(q, 10, 64)
	if !ok || !found || err1 != nil || err2 != nil {
		return listPosition{}, ErrBadPosition
	}
	return listPosition{time.UnixMicro(micros), seq}, nil
}

// ValidListPosition reports whether s is a position List could have
// returned (of either kind).
func ValidListPosition(s string) bool {
	if strings.HasPrefix(s, "b") {
		_, _, err := parseBatchPosition(s)
		return err == nil
	}
	_, err := parseListPosition(s)
	return err == nil && s != ""
}

// listBatch lists a file's payments, last line first: through its parts
// (a chunk's keys to a row), each key's row read by its primary key.
func (s *Service) listBatch(ctx context.Context, f ListFilter, after string, limit int) (ListPage, error) {
	part, offset, err := parseBatchPosition(after)
	if err != nil {
		return ListPage{}, err
	}
	// A file that holds none of the tenant's payments lists as an unknown
	// one does: empty, with no position that would tell its size.
	has, err := s.cfg.Store.q.BatchHasTenant(ctx, dbsqlc.BatchHasTenantParams{BatchID: f.BatchID, TenantID: f.TenantID})
	if err != nil {
		return ListPage{}, fmt.Errorf("payment: list batch %s: %w", f.BatchID, err)
	}
	if !has {
		return ListPage{Payments: []View{}}, nil
	}
	budget := min(max(10*limit, 1000), maxListScan)
	// The candidates, last line first, up to the budget, with the place
	// each one is at.
	type candidate struct {
		key          string
		part, offset int
	}
	var cands []candidate
	exhausted := false // every part before the position was read
	for len(cands) < budget && !exhausted {
		parts, err := s.cfg.Store.q.BatchPartsBefore(ctx, dbsqlc.BatchPartsBeforeParams{BatchID: f.BatchID, LastPart: int32(part), MaxParts: 4})
		if err != nil {
			return ListPage{}, fmt.Errorf("payment: list batch %s: %w", f.BatchID, err)
		}
		exhausted = len(parts) < 4
		for _, p := range parts {
			hi := len(p.PaymentIds) - 1
			if int(p.Part) == part && offset >= 0 {
				hi = min(hi, offset-1)
			}
			for i := hi; i >= 0 && len(cands) < budget; i-- {
				cands = append(cands, candidate{p.PaymentIds[i], int(p.Part), i})
			}
			part, offset = int(p.Part)-1, -1
			if len(cands) == budget {
				break
			}
		}
		exhausted = exhausted || part < 0
	}
	// More may follow the last candidate read: the reading stopped at the
	// budget, or parts remain.
	more := !exhausted || len(cands) == budget
	keys := make([]string, len(cands))
	for i, c := range cands {
		keys[i] = c.key
	}
	views, err := s.listed(ctx, f, keys) // in the candidates' order, the filtered ones left out
	if err != nil {
		return ListPage{}, err
	}
	last := len(cands) - 1 // where the next page starts before
	if len(views) > limit {
		views = views[:limit]
		last = slices.IndexFunc(cands, func(c candidate) bool { return c.key == views[limit-1].key })
		more = true
	}
	next := ""
	if more && last >= 0 {
		next = "b" + strconv.Itoa(cands[last].part) + "." + strconv.Itoa(cands[last].offset)
	}
	out := make([]View, len(views))
	for i, v := range views {
		out[i] = v.View
	}
	return ListPage{Payments: out, Next: next}, nil
}

// parseBatchPosition reads a file list's position: the part and the
// offset in it of the last payment shown (the next page starts before
// it); "" is past the file's end.
func parseBatchPosition(s string) (part, offset int, err error) {
	if s == "" {
		return 1 << 30, -1, nil
	}
	body, ok := strings.CutPrefix(s, "b")
	p, o, found := strings.Cut(body, ".")
	part, err1 := strconv.Atoi(p)
	offset, err2 := strconv.Atoi(o)
	if !ok || !found || err1 != nil || err2 != nil || part < 0 || offset < 0 {
		return 0, 0, ErrBadPosition
	}
	return part, offset, nil
}

// keyedView is a listed payment with its key.
type keyedView struct {
	key string
	View
}

// listed reads the payments with these keys that pass the filter, in the
// keys' order.
func (s *Service) listed(ctx context.Context, f ListFilter, keys []string) ([]keyedView, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	rows, err := s.cfg.Store.q.ListedPayments(ctx, dbsqlc.ListedPaymentsParams{PaymentIds: keys, TenantID: f.TenantID, Status: string(f.Status),
		DebtorAccount: f.DebtorAccount, Rail: f.Rail, Priority: string(f.Priority), RequestedFrom: f.RequestedFrom, RequestedTo: f.RequestedTo})
	if err != nil {
		return nil, fmt.Errorf("payment: list: %w", err)
	}
	byKey := make(map[string]View, len(rows))
	for _, r := range rows {
		v := View{PaymentID: r.ExternalID, TenantID: r.TenantID, Status: Status(r.Status), StatusReason: ptr.Deref(r.StatusReason),
			RequestedExecutionTime: &r.RequestedExecutionTime, ScheduledExecutionTime: r.ScheduledExecutionTime,
			CreatedAt: &r.CreatedAt, UpdatedAt: &r.UpdatedAt, ExecutionRef: ptr.Deref(r.ExecutionRef),
			Rail: ptr.Deref(r.Rail), ExecutionDate: executionDate(ptr.Deref(r.ExecutionDate)), Priority: Priority(r.Priority)}
		if r.Amount != nil && r.Currency != nil {
			v.Amount, v.Currency = displayAmount(&Money{Amount: *r.Amount, Currency: *r.Currency}), *r.Currency
		}
		byKey[r.PaymentID] = v
	}
	out := make([]keyedView, 0, len(rows))
	for _, k := range keys {
		if v, ok := byKey[k]; ok {
			out = append(out, keyedView{k, v})
		}
	}
	return out, nil
}
