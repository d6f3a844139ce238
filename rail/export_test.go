package rail

// Fixtures for the external tests (package rail_test).
var (
	GoodInstruction = goodInstruction
	MessageFor      = messageFor
)

// SenderFor is the sender the router uses for d (built on first use).
func (r *Router) SenderFor(d Destination) (Rail, error) { return r.sender(d) }

// SenderCount is how many directory senders the router has built.
func (r *Router) SenderCount() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.senders)
}
