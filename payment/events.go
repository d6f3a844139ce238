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
	out := make([]string, len(publishedStatuses))
	for i, s := range publishedStatuses {
		out[i] = EventType(s)
	}
	return out
}

// publishedStatuses are the statuses a payment moves to (RECEIVED is
// where it starts).
var publishedStatuses = []Status{StatusScheduled, StatusRejected, StatusAccepted, StatusProcessing, StatusDelivered,
	StatusFailed, StatusReturned, StatusCancelled}
