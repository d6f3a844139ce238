package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Embedded is an in-process Kafka-protocol cluster (franz-go's kfake) on
// a real TCP port of loopback: paydispatch's own clients and outside
// ones (kcat, librdkafka) talk to it as to a broker. It keeps records in
// memory only: for tests and the demo, not for production.
type Embedded struct {
	cluster *kfake.Cluster
}

// StartEmbedded starts a one-broker cluster on loopback (port 0: any free
// port) with topics created, each of partitions partitions; producing to
// another topic creates it.
func StartEmbedded(port int, partitions int32, topics ...string) (*Embedded, error) {
	if partitions < 1 {
		partitions = 1
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(int(partitions))}
	if port > 0 {
		opts = append(opts, kfake.Ports(port))
	}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(partitions, topics...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: embedded cluster: %w", err)
	}
	return &Embedded{cluster: c}, nil
}

// Brokers are the addresses clients connect to.
func (e *Embedded) Brokers() []string { return e.cluster.ListenAddrs() }

// CreateTopic creates a topic of partitions partitions.
func (e *Embedded) CreateTopic(topic string, partitions int32) error {
	return e.cluster.CreateTopic(topic, partitions, nil)
}

// Close stops the cluster; its records are gone.
func (e *Embedded) Close() { e.cluster.Close() }
