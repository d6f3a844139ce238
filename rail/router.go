package rail

import (
	"context"
	"fmt"
	"sort"

	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/outbox"
)

// Rail is a Sender for one rail type.
type Rail interface {
	outbox.Sender
	// Type is the outbox rail type the rail serves.
	Type() string
}

// Router is the relayer's one Sender: it dispatches each message to the
// rail configured for its RailType. A message for a type no rail serves
// fails Validate (a terminal failure: configuration, not chance, decides
// it). Safe for concurrent use; fixed after NewRouter.
type Router struct {
	rails map[string]Rail
}

var _ outbox.Sender = (*Router)(nil)

// NewRouter returns a router over rails; two rails of one type are a
// configuration error.
func NewRouter(rails ...Rail) (*Router, error) {
	r := &Router{rails: make(map[string]Rail, len(rails))}
	for _, rl := range rails {
		t := rl.Type()
		if t == "" {
			return nil, fmt.Errorf("rail: a rail without a rail type")
		}
		if _, dup := r.rails[t]; dup {
			return nil, fmt.Errorf("rail: two rails for rail type %q", t)
		}
		r.rails[t] = rl
	}
	return r, nil
}

// Types lists the rail types served, sorted.
func (r *Router) Types() []string {
	out := make([]string, 0, len(r.rails))
	for t := range r.rails {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Validate checks m with its rail; an unknown rail type is an error.
func (r *Router) Validate(m outbox.Message) error {
	rl, ok := r.rails[m.RailType]
	if !ok {
		return r.unknown(m)
	}
	return rl.Validate(m)
}

// Send sends m through its rail; an unknown rail type is Terminal.
func (r *Router) Send(ctx context.Context, m outbox.Message) outbox.Result {
	rl, ok := r.rails[m.RailType]
	if !ok {
		return outbox.Result{Outcome: outbox.Terminal, Code: CodeUnknownRailType, Message: r.unknown(m).Error()}
	}
	return rl.Send(ctx, m)
}

// Inquire asks m's rail; with no rail for its type nobody can be asked,
// so the outcome stays Unknown.
func (r *Router) Inquire(ctx context.Context, m outbox.Message) outbox.Result {
	rl, ok := r.rails[m.RailType]
	if !ok {
		return outbox.Result{Outcome: outbox.Unknown, Code: CodeUnknownRailType, Message: r.unknown(m).Error()}
	}
	return rl.Inquire(ctx, m)
}

func (r *Router) unknown(m outbox.Message) error {
	return fieldErr("railType", "no rail configured for %q (configured: %v)", plaintext.Clip(m.RailType, 32), r.Types())
}
