package kafka

import (
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// AfterStore sets the hook run after a chunk is stored and before its
// offsets are committed: a test's crash point.
func AfterStore(cfg *IntakeConfig, f func(recs []*kgo.Record)) { cfg.afterStore = f }

// Fake is the embedded cluster's kfake, for a test to break its brokers.
func Fake(e *Embedded) *kfake.Cluster { return e.cluster }

// CloseTimeout bounds how long Run takes to leave its group and close.
const CloseTimeout = closeTimeout
