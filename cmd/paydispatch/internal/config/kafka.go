package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"unicode"

	"github.com/paydispatch/paydispatch/kafka"
)

// Kafka says where the Kafka intake reads and the event stream writes
// (package kafka). No brokers: neither runs.
type Kafka struct {
	// Brokers are host:port seeds; Embedded instead starts an in-process
	// cluster (kfake) on loopback, on EmbeddedPort (0: any free port).
	Brokers      []string
	Embedded     bool
	EmbeddedPort int
	Topic        string
	Group        string
	DeadLetters  string
	// EventsTopic: "" leaves the event stream as it is, "off" turns it
	// off; otherwise the topic the events go to.
	EventsTopic  string
	EventLanes   int
	Chunk        int
	ReadyCeiling int
	// MaxRecordBytes is the largest record the intake takes.
	MaxRecordBytes int
	// Tenants the intake takes; none: every tenant with a ledger account.
	Tenants []string
}

// EventsOff is the EventsTopic value that turns the event stream off.
const EventsOff = "off"

// On reports whether a broker (or the embedded cluster) is configured.
func (k Kafka) On() bool { return k.Embedded || len(k.Brokers) > 0 }

// Events reports whether events are to be published.
func (k Kafka) Events() bool { return k.On() && k.EventsTopic != "" && k.EventsTopic != EventsOff }

// validTopic is Kafka's rule for topic names.
func validTopic(v string) bool {
	if v == "" || len(v) > 249 || v == "." || v == ".." {
		return false
	}
	for _, c := range v {
		if !(c < unicode.MaxASCII && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')) {
			return false
		}
	}
	return true
}

func topicSetting(flag, env, def, usage string, dst *string, optional bool) *Setting {
	return &Setting{Flag: flag, Env: env, Default: def, Usage: usage, Parse: func(v string) error {
		if v == "" && optional {
			*dst = ""
			return nil
		}
		if !validTopic(v) {
			return errors.New("want a Kafka topic name: 1 to 249 of a-z A-Z 0-9 . _ -")
		}
		*dst = v
		return nil
	}}
}

// KafkaSettings binds k's settings.
func KafkaSettings(k *Kafka) []*Setting {
	return []*Setting{
		{Flag: "kafka-brokers", Env: "PAYDISPATCH_KAFKA_BROKERS",
			Usage: "Kafka brokers, host:port comma-separated, or 'embedded' for an in-process cluster on loopback (tests, the demo); empty: no Kafka",
			Parse: func(v string) error {
				k.Brokers, k.Embedded = nil, false
				switch v {
				case "":
					return nil
				case "embedded":
					k.Embedded = true
					return nil
				}
				for _, b := range strings.Split(v, ",") {
					b = strings.TrimSpace(b)
					host, port, err := net.SplitHostPort(b)
					if err != nil || host == "" || port == "" {
						return fmt.Errorf("want host:port seeds comma-separated, e.g. kafka-1:9092,kafka-2:9092, or embedded")
					}
					k.Brokers = append(k.Brokers, b)
				}
				return nil
			}},
		IntVar("kafka-embedded-port", "PAYDISPATCH_KAFKA_EMBEDDED_PORT", "0", 0, 65535,
			"the embedded cluster's port on 127.0.0.1 (0: any free port, logged)", &k.EmbeddedPort),
		topicSetting("kafka-topic", "PAYDISPATCH_KAFKA_TOPIC", "paydispatch.payment-requests",
			"topic the Kafka intake consumes payment requests from", &k.Topic, false),
		{Flag: "kafka-group", Env: "PAYDISPATCH_KAFKA_GROUP", Default: "paydispatch-intake",
			Usage: "the Kafka intake's consumer group: intakes of one group share the topic's partitions",
			Parse: func(v string) error {
				if v == "" || len(v) > 255 {
					return errors.New("want a consumer group name of 1 to 255 characters")
				}
				k.Group = v
				return nil
			}},
		topicSetting("kafka-dead-letter-topic", "PAYDISPATCH_KAFKA_DEAD_LETTER_TOPIC", "",
			"topic for records that cannot become payments (default: the intake topic + .dlq)", &k.DeadLetters, true),
		{Flag: "kafka-events-topic", Env: "PAYDISPATCH_KAFKA_EVENTS_TOPIC",
			Usage: "topic each payment status change is published to (empty: leave the event stream as it is; 'off': turn it off)",
			Parse: func(v string) error {
				if v != "" && v != EventsOff && !validTopic(v) {
					return errors.New("want a Kafka topic name (a-z A-Z 0-9 . _ -), or off")
				}
				k.EventsTopic = v
				return nil
			}},
		IntVar("kafka-event-lanes", "PAYDISPATCH_KAFKA_EVENT_LANES", "64", 1, 1024,
			"ordered lanes the events are spread over by payment (change only with the stream drained)", &k.EventLanes),
		IntVar("kafka-chunk", "PAYDISPATCH_KAFKA_CHUNK", "20000", 1, 100_000, "most records the intake takes in one chunk", &k.Chunk),
		IntVar("kafka-max-record-bytes", "PAYDISPATCH_KAFKA_MAX_RECORD_BYTES", strconv.Itoa(kafka.DefaultMaxRecordBytes), 1024, kafka.MaxRecordBytesLimit,
			"largest record (key, value and headers) the intake takes; a larger one goes to the dead-letter topic by reference", &k.MaxRecordBytes),
		IntVar("kafka-ready-ceiling", "PAYDISPATCH_KAFKA_READY_CEILING", "1000000", 0, 1_000_000_000,
			"the intake pauses while more PAYMENT items than this are READY in the queue (0: never)", &k.ReadyCeiling),
		{Flag: "kafka-tenants", Env: "PAYDISPATCH_KAFKA_TENANTS",
			Usage: "tenants the intake takes payments of, comma-separated (empty: every tenant with a ledger account)",
			Parse: func(v string) error {
				k.Tenants = nil
				for _, t := range strings.Split(v, ",") {
					if t = strings.TrimSpace(t); t != "" {
						k.Tenants = append(k.Tenants, t)
					}
				}
				return nil
			}},
	}
}
