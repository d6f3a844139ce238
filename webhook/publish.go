package webhook

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/paydispatch/paydispatch/webhook/internal/dbsqlc"
)

// DBTX is a connection or a transaction: Publish writes in the caller's.
type DBTX = dbsqlc.DBTX

// Event is one event to publish: its tenant's endpoints that take its
// type each get a delivery of Payload, a JSON object whose "id" is the
// event's id (a receiver deduplicates on it).
type Event struct {
	TenantID string
	// Subject is what the event is about: one subject's events reach an
	// endpoint in the order they were published.
	Subject string
	Type    string
	Payload json.RawMessage
}

// Publish writes the events' deliveries in the caller's transaction, so
// that they go out if and only if it commits, and returns how many it
// wrote. Domains that publish from SQL call webhook_publish in their own
// statements (package payment does, from a trigger).
func Publish(ctx context.Context, db DBTX, events []Event) (int, error) {
	var arg dbsqlc.PublishParams
	for i, e := range events {
		var head struct {
			ID uuid.UUID `json:"id"`
		}
		if e.TenantID == "" || e.Subject == "" || e.Type == "" {
			return 0, fmt.Errorf("webhook: event %d: TenantID, Subject and Type are required", i)
		}
		if err := json.Unmarshal(e.Payload, &head); err != nil || head.ID == uuid.Nil {
			return 0, fmt.Errorf("webhook: event %d: the payload must be a JSON object with a UUID \"id\"", i)
		}
		arg.TenantIds, arg.Subjects = append(arg.TenantIds, e.TenantID), append(arg.Subjects, e.Subject)
		arg.EventTypes, arg.Payloads = append(arg.EventTypes, e.Type), append(arg.Payloads, e.Payload)
	}
	n, err := dbsqlc.New(db).Publish(ctx, arg)
	if err != nil {
		return 0, fmt.Errorf("webhook: publish %d events: %w", len(events), err)
	}
	return int(n), nil
}
