package kafka

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkLimit lowers the intake's record limit to what the brokers take on
// the dead-letter topic, less a dead letter's overhead, when they say and
// it is lower: every record under the limit can then go whole to the
// dead-letter topic. Brokers that do not say (no rights to describe
// configs, no answer in 10 s) leave it as configured; a dead letter they
// refuse as too large goes again by reference.
func (in *Intake) checkLimit(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	limit, err := in.brokerLimit(ctx)
	if err != nil || limit <= 0 {
		in.log.Info("kafka intake: the brokers' limit on the dead-letter topic is unknown; keeping the intake's", "max_record_bytes", in.maxRecord, "err", err)
		return
	}
	if room := limit - letterOverhead; room < in.maxRecord {
		in.maxRecord = max(room, 1024)
		in.log.Warn("kafka intake: the dead-letter topic takes less than the intake's limit; lowering it",
			"max_message_bytes", limit, "max_record_bytes", in.maxRecord)
	}
}

// brokerLimit is the dead-letter topic's max.message.bytes, or, for a
// topic not created yet, the brokers' message.max.bytes (the default an
// automatically created topic takes); 0 if they do not say.
func (in *Intake) brokerLimit(ctx context.Context) (int, error) {
	describe := func(typ kmsg.ConfigResourceType, name, config string) (int, error) {
		req := kmsg.NewPtrDescribeConfigsRequest()
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName, res.ConfigNames = typ, name, []string{config}
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, in.client)
		if err != nil {
			return 0, err
		}
		for _, r := range resp.Resources {
			if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
				return 0, err
			}
			for _, c := range r.Configs {
				if c.Name == config && c.Value != nil {
					return strconv.Atoi(*c.Value)
				}
			}
		}
		return 0, nil
	}
	n, err := describe(kmsg.ConfigResourceTypeTopic, in.cfg.DeadLetterTopic, "max.message.bytes")
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return describe(kmsg.ConfigResourceTypeBroker, "", "message.max.bytes")
	}
	return n, err
}
