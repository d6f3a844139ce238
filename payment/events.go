package payment

import (
	"context"
	"fmt"
	"strings"

	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
)

// EventType is the type of the event a payment's move to status publishes
// to its tenant's webhook endpoints: "payment." and the status in lower
// case. The migration that adds the trigger (00042) and payment_event
// (migrations/functions.sql) publish them; docs/webhooks.md describes the
// event and docs/schemas/payment-event.v1.json is its schema.
func EventType(s Status) string { return "payment." + strings.ToLower(string(s)) }

// EventRescheduled is the type of the event a SCHEDULED payment
// publishes when it moves to another business day without changing
// status: its tenant's ROLL took it past a missed cut-off. A slot moved
// within its day (a lever) publishes nothing.
const EventRescheduled = "payment.rescheduled"

// EventTypes are the types a tenant's endpoint can ask for: one per
// status a payment can move to, and payment.rescheduled.
func EventTypes() []string {
	stored := StoredStatuses()
	out := make([]string, len(stored), len(stored)+1)
	for i, s := range stored {
		out[i] = EventType(s)
	}
	return append(out, EventRescheduled)
}

// StoredStatuses are the statuses a stored payment can have: every one
// it moves to (RECEIVED is where it starts, before Phase A stores it).
func StoredStatuses() []Status {
	return []Status{StatusScheduled, StatusRejected, StatusAccepted, StatusProcessing, StatusDelivered,
		StatusFailed, StatusReturned, StatusCancelled, StatusHeld, StatusAwaitingApproval}
}

// EventRailType is the outbox rail type payment events go out under when
// the event stream is on: the relayer's sender for it publishes them
// (package kafka).
const EventRailType = "PAYMENT_EVENT"

// DefaultEventLanes is how many ordered lanes the event stream spreads
// payments over: as many events go out at once, each lane in order.
const DefaultEventLanes = 64

// StartEventStream turns the event stream on: from the next commit, every
// status change also enqueues its event (the webhooks' event, same id) in
// the outbox under EventRailType, in the transaction of the change, in
// one of lanes ordered lanes chosen by payment. Lanes change only with the
// stream drained: a payment whose lane changed could overtake itself.
func (s *Store) StartEventStream(ctx context.Context, lanes int) error {
	if lanes < 1 || lanes > 1024 {
		return fmt.Errorf("payment: event stream lanes %d: want 1 to 1024", lanes)
	}
	if err := s.q.SetEventStream(ctx, dbsqlc.SetEventStreamParams{RailType: EventRailType, Lanes: int32(lanes)}); err != nil {
		return fmt.Errorf("payment: start event stream: %w", err)
	}
	return nil
}

// StopEventStream turns the event stream off; events already enqueued
// still go out. It reports whether the stream was on.
func (s *Store) StopEventStream(ctx context.Context) (bool, error) {
	n, err := s.q.StopEventStream(ctx)
	if err != nil {
		return false, fmt.Errorf("payment: stop event stream: %w", err)
	}
	return n > 0, nil
}
