package payment

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/txdetail"
)

// ItemType is the payments' item type in the dispatch queue.
const ItemType = "PAYMENT"

// Status is a payment's business status (the state diagram in docs/design.md,
// plus REJECTED for Phase A refusals and FAILED for compensated executions).
type Status string

const (
	StatusScheduled  Status = "SCHEDULED"
	StatusAccepted   Status = "ACCEPTED"
	StatusProcessing Status = "PROCESSING"
	// StatusDelivered: the rail took the payment.
	StatusDelivered Status = "DELIVERED"
	// StatusReturned: the rail refused it for good; the debit was given
	// back.
	StatusReturned Status = "RETURNED"
	StatusRejected Status = "REJECTED"
	StatusFailed   Status = "FAILED"
	// StatusCancelled: cancelled before its execution began; never
	// debited, never sent to the rail.
	StatusCancelled Status = "CANCELLED"
	// StatusHeld: set aside by its tenant's cut-off rule (HOLD): it could
	// not reach its rail before the cut-off. Never debited; an operator
	// releases it (paced again, on the rail's next window) or cancels it.
	StatusHeld Status = "HELD"
)

// Request is a payment as a client submits it, the one declaration of its
// fields: the decoders (JSON, CSV) derive their members and columns from
// it, and a test pushes every field through each other shape (staged,
// stored, the saga's state, the rail's instruction) and fails naming one
// that is dropped. Field names are camelCase in JSON, as in the pacing
// API. A new optional detail for the rail goes in txdetail.Details.
type Request struct {
	PaymentID              string    `json:"paymentId,omitempty"`
	TenantID               string    `json:"tenantId"`
	DebtorAccount          string    `json:"debtorAccount"`
	Amount                 string    `json:"amount"`
	Currency               string    `json:"currency"`
	Creditor               Creditor  `json:"creditor"`
	RequestedExecutionTime time.Time `json:"requestedExecutionTime"`
	RemittanceInfo         string    `json:"remittanceInfo,omitempty"`
	// Rail is the rail the payment leaves by (package routing): the one
	// it names, or, when it names none, the one the routing rules chose
	// at intake (routed then says so).
	Rail string `json:"rail,omitempty"`
	// Priority orders the payment among those waiting under its configs
	// (HIGH, NORMAL, LOW; empty: NORMAL). A handling instruction, not
	// part of what the payment is: the same payment sent again with
	// another priority is a replay, and SetPriority changes it.
	Priority Priority `json:"priority,omitempty"`
	// Details are the transfer's optional details (package txdetail,
	// where each is declared): validated, stored and carried to the rail
	// as they are. Their JSON members are the request's own.
	txdetail.Details

	// routed: Rail was chosen by the routing rules, not named by the
	// client, so a replay is not told from the first by it.
	routed bool
	// approval: the approvals its tenant's rules want (nil: none), set
	// at intake and stored with its id's claim (Receive).
	approval *approvalNeed
}

// Creditor is who is paid.
type Creditor struct {
	Name string `json:"name"`
	IBAN string `json:"iban,omitempty"`
	BIC  string `json:"bic,omitempty"`
}

// Money is an amount in a currency; never a float.
type Money struct {
	Amount   decimal.Decimal
	Currency string
}

// Priority orders a payment among those waiting under its rate-limit
// configs: HIGH ones take the earliest free slots ahead of NORMAL ones
// that came before them, NORMAL ones ahead of LOW ones, each by at most
// PriorityLead (see Priority.rank).
type Priority string

// The priorities.
const (
	PriorityHigh   Priority = "HIGH"
	PriorityNormal Priority = "NORMAL"
	PriorityLow    Priority = "LOW"
)

// PriorityLead is how far a priority moves a payment in the order of
// those waiting: a payment's place is the time it began to wait (its
// requested time, or when Phase A stored it if later), HIGH's earlier by
// PriorityLead, LOW's later by it. A HIGH payment therefore goes ahead of
// the NORMAL ones that began to wait less than an hour before it, never
// of older ones, and no payment is overtaken by those that began to wait
// more than an hour (a LOW one: two) after it: the bound on how long a
// lower priority waits, whatever keeps coming.
const PriorityLead = time.Hour

// Valid reports whether p is a priority ("" is NORMAL's default, not
// valid here).
func (p Priority) Valid() bool {
	return p == PriorityHigh || p == PriorityNormal || p == PriorityLow
}

// orDefault is p, or NORMAL for none.
func (p Priority) orDefault() Priority {
	if p == "" {
		return PriorityNormal
	}
	return p
}

// lead is how much earlier than its waiting time p places a payment.
func (p Priority) lead() time.Duration {
	switch p {
	case PriorityHigh:
		return PriorityLead
	case PriorityLow:
		return -PriorityLead
	}
	return 0
}

// place is where a payment that began to wait at waiting, with priority
// p, stands among those waiting: earlier stands first.
func (p Priority) place(waiting time.Time) time.Time { return waiting.Add(-p.lead()) }

// rank orders the priorities: HIGH first.
func (p Priority) rank() int {
	switch p {
	case PriorityHigh:
		return 0
	case PriorityLow:
		return 2
	}
	return 1
}
