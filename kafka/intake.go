package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/internal/wait"
	"github.com/paydispatch/paydispatch/payment"
)

// Header names the intake reads, and those it writes on a dead letter.
const (
	HeaderTenant       = "tenant-id"
	HeaderError        = "paydispatch-error"
	HeaderErrorField   = "paydispatch-error-field"
	HeaderSourceTopic  = "paydispatch-source-topic"
	HeaderSourcePart   = "paydispatch-source-partition"
	HeaderSourceOffset = "paydispatch-source-offset"
)

// DefaultChunkRecords is the most records a chunk takes by default: two
// of the bulk path's 10,000-payment transactions, so that the second is
// stored while the first's Phase A starts (5,000 took 0.65 of the bulk
// file's rate in bench kafka, 20,000 0.99).
const DefaultChunkRecords = 20_000

// Payments is what the intake needs of the payments' side.
type Payments interface {
	// CheckBatch validates requests as a bulk file's (lines: each one's
	// number, here its index in the chunk + 1).
	CheckBatch(ctx context.Context, reqs []payment.Request, lines []int) ([]payment.LineError, error)
	// StartBatch stores them and starts their Phase A; the indexes of
	// those whose id their tenant used for another payment are in
	// Conflicts.
	StartBatch(ctx context.Context, reqs []payment.Request, whole bool) (payment.BatchSubmission, error)
}

// IntakeConfig configures an Intake. Brokers, Topic, Group and Payments
// are required.
type IntakeConfig struct {
	Brokers []string
	// Topic is where payment requests arrive; Group the consumer group.
	Topic, Group string
	// DeadLetterTopic takes the records that cannot become payments
	// (default Topic + ".dlq").
	DeadLetterTopic string
	// ChunkRecords is the most records one chunk takes (default
	// DefaultChunkRecords);
	// ChunkWait how long a chunk waits to fill once a record is in
	// (default 100 ms).
	ChunkRecords int
	ChunkWait    time.Duration
	// ReadyCeiling pauses fetching while ReadyDepth reports more than it
	// (0: never). ReadyDepth is read at most every CheckEvery (default 1 s).
	ReadyCeiling int64
	ReadyDepth   func(ctx context.Context) (int64, error)
	CheckEvery   time.Duration
	// KnownTenants reports which tenants exist; a record of another goes
	// to the dead-letter topic. Nil: every tenant is known.
	KnownTenants func(ctx context.Context, tenants []string) (map[string]bool, error)
	Payments     Payments
	Metrics      *Metrics
	Logger       *slog.Logger
	// ClientOpts are added to the client's options (TLS, SASL).
	ClientOpts []kgo.Opt
	// afterStore, when set (tests), runs after a chunk is stored and
	// before its offsets are committed.
	afterStore func(recs []*kgo.Record)
}

// Intake is a consumer of payment requests. Run it in several processes
// with one Group: the topic's partitions are shared among them.
type Intake struct {
	cfg    IntakeConfig
	client *kgo.Client
	log    *slog.Logger
	paused bool
}

// NewIntake checks cfg and connects (lazily: the brokers are dialled by Run).
func NewIntake(cfg IntakeConfig) (*Intake, error) {
	switch {
	case len(cfg.Brokers) == 0:
		return nil, errors.New("kafka: intake: no brokers")
	case cfg.Topic == "" || cfg.Group == "":
		return nil, errors.New("kafka: intake: a topic and a consumer group are required")
	case cfg.Payments == nil:
		return nil, errors.New("kafka: intake: no Payments")
	}
	if cfg.DeadLetterTopic == "" {
		cfg.DeadLetterTopic = cfg.Topic + ".dlq"
	}
	if cfg.ChunkRecords <= 0 {
		cfg.ChunkRecords = DefaultChunkRecords
	}
	if cfg.ChunkWait <= 0 {
		cfg.ChunkWait = 100 * time.Millisecond
	}
	if cfg.CheckEvery <= 0 {
		cfg.CheckEvery = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Offsets are committed by hand, after the payments are stored,
		// and a poll's partitions stay ours until then.
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.FetchMaxWait(250 * time.Millisecond),
		// A consumer that died holds its partitions until its session
		// lapses: 10 s, not Kafka's 45 s, so its records wait less.
		kgo.SessionTimeout(10 * time.Second),
		kgo.HeartbeatInterval(time.Second),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.AllowAutoTopicCreation(),
	}, cfg.ClientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: intake client: %w", err)
	}
	return &Intake{cfg: cfg, client: cl, log: cfg.Logger.With("component", "kafka-intake", "topic", cfg.Topic)}, nil
}

// Run consumes until ctx is done, then leaves the group. Records polled
// and not yet committed when it stops are read again by whoever takes
// their partitions.
func (in *Intake) Run(ctx context.Context) error {
	defer in.client.Close()
	in.log.Info("kafka intake started", "group", in.cfg.Group, "dead_letters", in.cfg.DeadLetterTopic)
	for ctx.Err() == nil {
		if err := in.holdBack(ctx); err != nil {
			break
		}
		recs := in.poll(ctx)
		if len(recs) == 0 {
			in.client.AllowRebalance()
			continue
		}
		for attempt := 0; ; attempt++ {
			err := in.take(ctx, recs)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return nil // uncommitted: read again by the next owner
			}
			in.log.Error("kafka intake: a chunk was not taken in; retrying it", "records", len(recs), "attempt", attempt+1, "err", err)
			if !wait.For(ctx, backoff(attempt)) {
				return nil
			}
		}
		if in.cfg.afterStore != nil {
			in.cfg.afterStore(recs)
		}
		if err := in.client.CommitRecords(ctx, recs...); err != nil {
			// Taken in, not committed: read again, stored already, so
			// nothing changes.
			in.log.Warn("kafka intake: commit failed; the records will be read again", "records", len(recs), "err", err)
		}
		in.client.AllowRebalance()
	}
	return nil
}

// poll gathers a chunk: up to ChunkRecords, for at most ChunkWait after
// the first record.
func (in *Intake) poll(ctx context.Context) []*kgo.Record {
	var recs []*kgo.Record
	var deadline time.Time
	for len(recs) < in.cfg.ChunkRecords {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				break
			}
			pctx, cancel = context.WithTimeout(ctx, left)
		}
		fetches := in.client.PollRecords(pctx, in.cfg.ChunkRecords-len(recs))
		cancel()
		if fetches.IsClientClosed() || ctx.Err() != nil {
			break
		}
		fetches.EachError(func(topic string, part int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				in.log.Warn("kafka intake: fetch", "partition", part, "err", err)
			}
		})
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if n := len(p.Records); n > 0 {
				in.cfg.Metrics.lag(p.Partition, p.HighWatermark-p.Records[n-1].Offset-1)
			}
		})
		got := fetches.Records()
		recs = append(recs, got...)
		if len(recs) > 0 && deadline.IsZero() {
			deadline = time.Now().Add(in.cfg.ChunkWait)
		}
	}
	in.cfg.Metrics.consumed(len(recs))
	return recs
}

// holdBack pauses fetching while the queue is over its ceiling.
func (in *Intake) holdBack(ctx context.Context) error {
	if in.cfg.ReadyCeiling <= 0 || in.cfg.ReadyDepth == nil {
		return nil
	}
	for {
		depth, err := in.cfg.ReadyDepth(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			in.log.Warn("kafka intake: queue depth unknown; going on", "err", err)
			return nil
		}
		over := depth > in.cfg.ReadyCeiling
		if over != in.paused {
			in.paused = over
			in.cfg.Metrics.setPaused(over)
			if over {
				in.client.PauseFetchTopics(in.cfg.Topic)
				in.log.Info("kafka intake paused: queue over its ceiling", "ready", depth, "ceiling", in.cfg.ReadyCeiling)
			} else {
				in.client.ResumeFetchTopics(in.cfg.Topic)
				in.log.Info("kafka intake resumed", "ready", depth, "ceiling", in.cfg.ReadyCeiling)
			}
		}
		if !over {
			return nil
		}
		// Paused: the group still needs us to let rebalances through.
		in.client.AllowRebalance()
		if !wait.For(ctx, in.cfg.CheckEvery) {
			return ctx.Err()
		}
	}
}

// refusal is why a record is a dead letter.
type refusal struct {
	field, reason string
}

// take turns a chunk into payments and dead letters. An error leaves the
// chunk to be taken again whole: every step is idempotent.
func (in *Intake) take(ctx context.Context, recs []*kgo.Record) error {
	refused := make(map[int]refusal)
	reqs := make([]payment.Request, 0, len(recs))
	at := make([]int, 0, len(recs)) // reqs[i] is recs[at[i]]
	first := map[[2]string]int{}    // a payment's first record in the chunk
	for i, rec := range recs {
		r, why := decode(rec)
		if why != nil {
			refused[i] = *why
			continue
		}
		k := [2]string{r.TenantID, r.PaymentID}
		if j, seen := first[k]; seen && r.PaymentID != "" {
			if bytes.Equal(recs[j].Value, rec.Value) {
				continue // a producer's retry: the same payment
			}
			refused[i] = refusal{"paymentId", "also at offset " + strconv.FormatInt(recs[j].Offset, 10) + " of partition " +
				strconv.Itoa(int(recs[j].Partition)) + " with different content"}
			continue
		}
		first[k] = i
		reqs, at = append(reqs, r), append(at, i)
	}
	if in.cfg.KnownTenants != nil && len(reqs) > 0 {
		var tenants []string
		seen := map[string]bool{}
		for _, r := range reqs {
			if !seen[r.TenantID] {
				seen[r.TenantID] = true
				tenants = append(tenants, r.TenantID)
			}
		}
		known, err := in.cfg.KnownTenants(ctx, tenants)
		if err != nil {
			return fmt.Errorf("known tenants: %w", err)
		}
		reqs, at = keep(reqs, at, func(i int) bool {
			if known[reqs[i].TenantID] {
				return true
			}
			refused[at[i]] = refusal{"tenantId", "unknown tenant " + plaintext.Clip(reqs[i].TenantID, 64) + ": it has no account"}
			return false
		})
	}
	lines := make([]int, len(reqs))
	for i := range lines {
		lines[i] = i + 1
	}
	lineErrs, err := in.cfg.Payments.CheckBatch(ctx, reqs, lines)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	bad := make(map[int]bool, len(lineErrs))
	for _, le := range lineErrs {
		i := le.Line - 1
		bad[i] = true
		rf := refusal{reason: "invalid payment"}
		if len(le.Fields) > 0 {
			rf.field, rf.reason = le.Fields[0].Field, ""
			for j, f := range le.Fields {
				if j > 0 {
					rf.reason += "; "
				}
				rf.reason += f.Field + ": " + f.Detail
			}
		}
		refused[at[i]] = rf
	}
	reqs, at = keep(reqs, at, func(i int) bool { return !bad[i] })
	if len(reqs) > 0 {
		sub, err := in.cfg.Payments.StartBatch(ctx, reqs, false)
		if err != nil {
			return fmt.Errorf("store %d payments: %w", len(reqs), err)
		}
		for _, i := range sub.Conflicts {
			refused[at[i]] = refusal{"paymentId", "already used by this tenant for a different payment"}
		}
		in.cfg.Metrics.accepted(len(reqs) - len(sub.Conflicts))
	}
	if len(refused) == 0 {
		return nil
	}
	letters := make([]*kgo.Record, 0, len(refused))
	for i, rf := range refused {
		letters = append(letters, in.deadLetter(recs[i], rf))
	}
	if err := in.client.ProduceSync(ctx, letters...).FirstErr(); err != nil {
		return fmt.Errorf("dead-letter %d records: %w", len(letters), err)
	}
	in.cfg.Metrics.deadLettered(len(letters))
	return nil
}

// decode reads a record's payment request and its tenant.
func decode(rec *kgo.Record) (payment.Request, *refusal) {
	r, err := payment.DecodeRequest(rec.Value)
	if err != nil {
		return r, &refusal{"", "unreadable: " + plaintext.Clip(err.Error(), 200)}
	}
	var header string
	for _, h := range rec.Headers {
		if h.Key == HeaderTenant {
			header = string(h.Value)
		}
	}
	switch {
	case r.TenantID == "" && header == "":
		return r, &refusal{"tenantId", "required: in the value or a " + HeaderTenant + " header"}
	case r.TenantID == "":
		r.TenantID = header
	case header != "" && header != r.TenantID:
		return r, &refusal{"tenantId", "the value's tenantId and the " + HeaderTenant + " header differ"}
	}
	if !field.ValidID(r.TenantID) {
		return r, &refusal{"tenantId", "not a tenant id: 1 to 64 letters, digits, '-', '_' or '.'"}
	}
	return r, nil
}

// deadLetter is rec as a dead letter: its key and value as they came,
// keyed by its origin, the reason in headers.
func (in *Intake) deadLetter(rec *kgo.Record, rf refusal) *kgo.Record {
	origin := rec.Topic + "/" + strconv.Itoa(int(rec.Partition)) + "/" + strconv.FormatInt(rec.Offset, 10)
	hs := append([]kgo.RecordHeader{}, rec.Headers...)
	hs = append(hs,
		kgo.RecordHeader{Key: HeaderError, Value: []byte(rf.reason)},
		kgo.RecordHeader{Key: HeaderSourceTopic, Value: []byte(rec.Topic)},
		kgo.RecordHeader{Key: HeaderSourcePart, Value: []byte(strconv.Itoa(int(rec.Partition)))},
		kgo.RecordHeader{Key: HeaderSourceOffset, Value: []byte(strconv.FormatInt(rec.Offset, 10))},
	)
	if rf.field != "" {
		hs = append(hs, kgo.RecordHeader{Key: HeaderErrorField, Value: []byte(rf.field)})
	}
	return &kgo.Record{Topic: in.cfg.DeadLetterTopic, Key: []byte(origin), Value: rec.Value, Headers: hs}
}

// keep filters reqs and their record indexes alike.
func keep(reqs []payment.Request, at []int, ok func(i int) bool) ([]payment.Request, []int) {
	var r2 []payment.Request
	var a2 []int
	for i := range reqs {
		if ok(i) {
			r2, a2 = append(r2, reqs[i]), append(a2, at[i])
		}
	}
	return r2, a2
}

func backoff(attempt int) time.Duration {
	return min(time.Duration(1<<min(attempt, 5))*250*time.Millisecond, 10*time.Second)
}
