package payment

import "strings"

// EventType is the type of the event a payment's move to status publishes
// to its tenant's webhook endpoints: "payment." and the status in lower
// case. The migration that adds the trigger (00042) and payment_event
// (migrations/functions.sql) publish them; docs/webhooks.md describes the
// event and docs/schemas/payment-event.v1.json is its schema.
func EventType(s Status) string { return "payment." + strings.ToLower(string(s)) }

// EventTypes are the types a tenant's endpoint can ask for: one per
// status a payment can move to.
func EventTypes() []string {
	stored := StoredStatuses()
	out := make([]string, len(stored))
	for i, s := range stored {
		out[i] = EventType(s)
	}
	return out
}

// StoredStatuses are the statuses a stored payment can have: every one
// it moves to (RECEIVED is where it starts, before Phase A stores it).
func StoredStatuses() []Status {
	return []Status{StatusScheduled, StatusRejected, StatusAccepted, StatusProcessing, StatusDelivered,
		StatusFailed, StatusReturned, StatusCancelled}
}
