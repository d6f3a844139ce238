package payment

import (
	"time"

	"github.com/shopspring/decimal"
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

// Request is a payment as a client submits it. Field names are camelCase in
// JSON, as in the pacing API.
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

	// routed: Rail was chosen by the routing rules, not named by the
	// client, so a replay is not told from the first by it.
	routed bool
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
