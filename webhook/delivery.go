package webhook

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/paydispatch/paydispatch/webhook/internal/dbsqlc"
)

// The states of a delivery.
const (
	StatePending   = "PENDING"
	StateSending   = "SENDING"
	StateDelivered = "DELIVERED"
	StateDead      = "DEAD"
)

// States lists them, in the order a delivery goes through them.
var States = []string{StatePending, StateSending, StateDelivered, StateDead}

// Delivery is one event's delivery to one endpoint.
type Delivery struct {
	ID          int64      `json:"id"`
	EndpointID  uuid.UUID  `json:"endpointId"`
	Subject     string     `json:"subject"`
	EventID     uuid.UUID  `json:"eventId"`
	EventType   string     `json:"eventType"`
	State       string     `json:"state"`
	Attempts    int        `json:"attempts"`
	NextAttempt *time.Time `json:"nextAttemptAt,omitempty"`
	LastStatus  int        `json:"lastStatus,omitempty"`
	LastError   string     `json:"lastError,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	SettledAt   *time.Time `json:"settledAt,omitempty"`
}

// Deliveries returns up to limit of an endpoint's deliveries, newest
// first, before the delivery id before (0: from the newest); state ""
// lists every state.
func (s Store) Deliveries(ctx context.Context, endpoint uuid.UUID, state string, before int64, limit int) ([]Delivery, error) {
	rows, err := dbsqlc.New(s.db).ListDeliveries(ctx, dbsqlc.ListDeliveriesParams{EndpointID: endpoint, State: state,
		Started: before > 0, BeforeID: before, MaxRows: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("webhook: endpoint %s: list deliveries: %w", endpoint, err)
	}
	out := make([]Delivery, len(rows))
	for i, r := range rows {
		d := Delivery{ID: r.DeliveryID, EndpointID: r.EndpointID, Subject: r.Subject, EventID: r.EventID, EventType: r.EventType,
			State: r.State, Attempts: int(r.Attempts), CreatedAt: r.CreatedAt, SettledAt: r.SettledAt}
		if r.State == StatePending {
			d.NextAttempt = &r.NextAttemptAt
		}
		if r.LastStatus != nil {
			d.LastStatus = int(*r.LastStatus)
		}
		if r.LastError != nil {
			d.LastError = *r.LastError
		}
		out[i] = d
	}
	return out, nil
}

// Redrive sends an endpoint's dead letters again (all of them, or those
// listed), each with its attempts anew, and returns how many. They go
// out after the subject's deliveries made meanwhile: order is kept among
// open deliveries only.
func (s Store) Redrive(ctx context.Context, endpoint uuid.UUID, ids []int64) (int64, error) {
	n, err := dbsqlc.New(s.db).RedriveDead(ctx, dbsqlc.RedriveDeadParams{EndpointID: endpoint, DeliveryIds: ids})
	if err != nil {
		return 0, fmt.Errorf("webhook: endpoint %s: redrive: %w", endpoint, err)
	}
	return n, nil
}
