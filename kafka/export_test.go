package kafka

import "github.com/twmb/franz-go/pkg/kgo"

// AfterStore sets the hook run after a chunk is stored and before its
// offsets are committed: a test's crash point.
func AfterStore(cfg *IntakeConfig, f func(recs []*kgo.Record)) { cfg.afterStore = f }
