package kafka

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/internal/wait"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/routing"
)

// Header names the intake reads, and those it writes on a dead letter.
const (
	HeaderTenant       = "tenant-id"
	HeaderError        = "paydispatch-error"
	HeaderErrorField   = "paydispatch-error-field"
	HeaderSourceTopic  = "paydispatch-source-topic"
	HeaderSourcePart   = "paydispatch-source-partition"
	HeaderSourceOffset = "paydispatch-source-offset"
	// HeaderSourceSize is the record's size in bytes (its key, value and
	// headers), HeaderSourceSHA256 the SHA-256 of its value in hex.
	HeaderSourceSize   = "paydispatch-source-size"
	HeaderSourceSHA256 = "paydispatch-source-sha256"
	// HeaderTrimmed ("true") marks a dead letter that stands for its
	// record by reference: the record's value and headers are left out.
	HeaderTrimmed = "paydispatch-trimmed"
)

// HeaderPrefix begins every header the intake writes on a dead letter. A
// record's own headers that begin with it, in any case, are dropped from
// its dead letter: a producer cannot pass off a reason or an origin as
// the intake's. The record on its topic keeps them.
const HeaderPrefix = "paydispatch-"

// Sizes. A dead letter carries its record whole only if it fits under
// the producer's limit and the brokers': the intake refuses a larger
// record by its own limit, which is checked against both, and sends it to
// the dead-letter topic by reference.
const (
	// ProducerMaxBytes is the largest batch the intake's producer sends:
	// Kafka's and franz-go's default, under the brokers' default
	// message.max.bytes of 1,048,588.
	ProducerMaxBytes = 1_000_012
	// letterOverhead bounds what a dead letter adds to its record: its key
	// (the origin), the intake's headers (the reason at most maxReason
	// bytes) and the batch's framing.
	letterOverhead = 4 << 10
	maxReason      = 1000
	// MaxRecordBytesLimit is the highest MaxRecordBytes: a record of that
	// size still goes whole to the dead-letter topic under ProducerMaxBytes.
	MaxRecordBytesLimit = ProducerMaxBytes - letterOverhead
	// DefaultMaxRecordBytes is the largest record the intake takes by
	// default: 64 KiB, the largest payment serve takes over HTTP (its
	// --max-body) and the longest line of a bulk file. A payment's JSON is
	// well under 2 KiB.
	DefaultMaxRecordBytes = 64 << 10
	// chunkBytes is where a chunk stops filling, whatever ChunkRecords
	// says: records of the largest size do not hold gigabytes at once.
	chunkBytes = 64 << 20
)

// Failures.
const (
	// faultTries is how often a chunk is tried before a failure that is
	// not an outage is blamed on its records: the chunk is split, and a
	// record that fails alone goes to the dead-letter topic.
	faultTries = 3
	// closeTimeout bounds leaving the group and closing the client when
	// Run ends; commitTimeout a chunk's commit.
	closeTimeout  = 5 * time.Second
	commitTimeout = 5 * time.Second
)

// DefaultChunkRecords is the most records a chunk takes by default: two
// of the bulk path's 10,000-payment transactions, so that the second is
// stored while the first's Phase A starts (5,000 took 0.65 of the bulk
// file's rate in bench kafka, 20,000 0.99).
const DefaultChunkRecords = 20_000

// Payments is what the intake needs of the payments' side.
type Payments interface {
	// Take is the payments' intake (payment.Service.Take): a chunk's
	// payments checked, the good ones stored and started, the rejections
	// (id conflicts among them) by line, here a payment's index in the
	// chunk + 1.
	Take(ctx context.Context, in payment.Intake) (payment.Taken, error)
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
	// MaxRecordBytes is the largest record (key, value and headers) the
	// intake takes (default DefaultMaxRecordBytes, at most
	// MaxRecordBytesLimit); a larger one goes to the dead-letter topic by
	// reference, unread. Run lowers it to what the brokers take on the
	// dead-letter topic, less a dead letter's overhead, when they say.
	MaxRecordBytes int
	// ReadyCeiling pauses fetching while ReadyDepth reports more than it
	// (0: never). ReadyDepth is read at most every CheckEvery (default 1 s).
	ReadyCeiling int64
	ReadyDepth   func(ctx context.Context) (int64, error)
	CheckEvery   time.Duration
	// KnownTenants reports which tenants exist; a record of another goes
	// to the dead-letter topic. Nil: every tenant is known.
	KnownTenants func(ctx context.Context, tenants []string) (map[string]bool, error)
	// Healthy reports whether what a chunk is stored to (the database,
	// Temporal) answers. A chunk that fails while it does not is held and
	// retried whole, never blamed on its records; nil: only the errors
	// known as an outage's hold a chunk so.
	Healthy  func(ctx context.Context) error
	Payments Payments
	Metrics  *Metrics
	Logger   *slog.Logger
	// ClientOpts are added to the client's options (TLS, SASL).
	ClientOpts []kgo.Opt
	// afterStore, when set (tests), runs after a chunk is stored and
	// before its offsets are committed.
	afterStore func(recs []*kgo.Record)
}

// Intake is a consumer of payment requests. Run it in several processes
// with one Group: the topic's partitions are shared among them.
type Intake struct {
	cfg       IntakeConfig
	client    *kgo.Client
	log       *slog.Logger
	paused    bool
	maxRecord int
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
	case cfg.MaxRecordBytes > MaxRecordBytesLimit:
		return nil, fmt.Errorf("kafka: intake: MaxRecordBytes %d over %d: the dead letter of such a record would be over the producer's limit of %d bytes",
			cfg.MaxRecordBytes, MaxRecordBytesLimit, ProducerMaxBytes)
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
	if cfg.MaxRecordBytes <= 0 {
		cfg.MaxRecordBytes = DefaultMaxRecordBytes
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
		kgo.ProducerBatchMaxBytes(ProducerMaxBytes),
	}, cfg.ClientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: intake client: %w", err)
	}
	return &Intake{cfg: cfg, client: cl, maxRecord: cfg.MaxRecordBytes,
		log: cfg.Logger.With("component", "kafka-intake", "topic", cfg.Topic)}, nil
}

// Run consumes until ctx is done, then leaves the group. Records polled
// and not yet committed when it stops are read again by whoever takes
// their partitions. It returns soon after ctx is done, whatever the
// brokers, the database or Temporal are doing: leaving the group and
// closing take at most closeTimeout, and are left to finish behind it.
func (in *Intake) Run(ctx context.Context) error {
	defer in.close()
	in.checkLimit(ctx)
	in.log.Info("kafka intake started", "group", in.cfg.Group, "dead_letters", in.cfg.DeadLetterTopic, "max_record_bytes", in.maxRecord)
	for ctx.Err() == nil {
		if err := in.holdBack(ctx); err != nil {
			break
		}
		recs := in.poll(ctx)
		if len(recs) == 0 {
			in.client.AllowRebalance()
			continue
		}
		if err := in.settle(ctx, recs, map[*kgo.Record]bool{}); err != nil {
			return nil // ctx is done; uncommitted: read again by the next owner
		}
		if in.cfg.afterStore != nil {
			in.cfg.afterStore(recs)
		}
		// Bounded, for a broker that does not answer.
		cctx, cancel := context.WithTimeout(ctx, commitTimeout)
		if err := in.client.CommitRecords(cctx, recs...); err != nil {
			// Taken in, not committed: read again, stored already, so
			// nothing changes.
			in.log.Warn("kafka intake: commit failed; the records will be read again", "records", len(recs), "err", err)
		}
		cancel()
		in.client.AllowRebalance()
	}
	return nil
}

// close leaves the group and closes the client within closeTimeout. A
// broker that does not answer is left behind: the group's session lapses
// on its own, and whoever takes the partitions reads their uncommitted
// records again.
func (in *Intake) close() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		// A poll blocks rebalances until allowed; leaving is one.
		in.client.AllowRebalance()
		if err := in.client.LeaveGroupContext(ctx); err != nil {
			in.log.Warn("kafka intake: leaving the group", "err", err)
		}
		in.client.Close()
	}()
	t := time.NewTimer(closeTimeout + time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		in.log.Warn("kafka intake: the client did not close in time; leaving it behind", "waited", closeTimeout+time.Second)
	}
}

// poll gathers a chunk: up to ChunkRecords (or chunkBytes), for at most
// ChunkWait after the first record.
func (in *Intake) poll(ctx context.Context) []*kgo.Record {
	var recs []*kgo.Record
	var deadline time.Time
	size := 0
	for len(recs) < in.cfg.ChunkRecords && size < chunkBytes {
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
		for _, r := range got {
			size += recordBytes(r)
		}
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

// settle takes recs in, however long it takes, and returns an error only
// when ctx is done. A failure while a dependency is out of reach (an
// outage) holds the chunk, retried whole with backoff: no valid payment
// is dead-lettered for an outage. A chunk that fails faultTries times
// otherwise is split in halves, each settled on its own, so that the
// records at fault hold nobody else; a record that fails alone goes to
// the dead-letter topic by reference. lettered are the records already on
// the dead-letter topic: a retry does not write them again.
func (in *Intake) settle(ctx context.Context, recs []*kgo.Record, lettered map[*kgo.Record]bool) error {
	faults := 0
	for attempt := 0; ; attempt++ {
		err := in.take(ctx, recs, lettered)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if in.outage(ctx, err) {
			in.log.Error("kafka intake: a chunk was not taken in (an outage); retrying it", "records", len(recs), "attempt", attempt+1, "err", err)
		} else if faults++; faults < faultTries {
			in.log.Error("kafka intake: a chunk was not taken in; retrying it", "records", len(recs), "attempt", attempt+1, "err", err)
		} else if len(recs) > 1 {
			half := len(recs) / 2
			in.log.Warn("kafka intake: a chunk keeps failing; splitting it", "records", len(recs), "err", err)
			in.cfg.Metrics.split()
			if err := in.settle(ctx, recs[:half], lettered); err != nil {
				return err
			}
			return in.settle(ctx, recs[half:], lettered)
		} else {
			rec := recs[0]
			in.log.Error("kafka intake: a record keeps failing alone; dead-lettering it by reference",
				"partition", rec.Partition, "offset", rec.Offset, "err", err)
			rf := refusal{reason: "not taken in: " + err.Error(), trimmed: true}
			return in.settleLetters(ctx, []letter{{rec, rf}}, lettered)
		}
		if !wait.For(ctx, backoff(attempt)) {
			return ctx.Err()
		}
	}
}

// settleLetters sends letters until they are on the dead-letter topic (or
// ctx is done).
func (in *Intake) settleLetters(ctx context.Context, letters []letter, lettered map[*kgo.Record]bool) error {
	for attempt := 0; ; attempt++ {
		err := in.sendLetters(ctx, letters, lettered)
		if err == nil || ctx.Err() != nil {
			return ctx.Err()
		}
		in.log.Error("kafka intake: dead letters not sent; retrying", "records", len(letters), "attempt", attempt+1, "err", err)
		if !wait.For(ctx, backoff(attempt)) {
			return ctx.Err()
		}
	}
}

// refusal is why a record is a dead letter, and whether it goes by
// reference.
type refusal struct {
	field, reason string
	trimmed       bool
}

// letter is a record the intake refuses, and why.
type letter struct {
	rec *kgo.Record
	rf  refusal
}

// take turns a chunk into payments and dead letters. An error leaves the
// chunk to be taken again: every step is idempotent.
func (in *Intake) take(ctx context.Context, recs []*kgo.Record, lettered map[*kgo.Record]bool) error {
	refused := make(map[int]refusal)
	reqs := make([]payment.Request, 0, len(recs))
	at := make([]int, 0, len(recs)) // reqs[i] is recs[at[i]]
	first := map[[2]string]int{}    // a payment's first record in the chunk
	for i, rec := range recs {
		if n := recordBytes(rec); n > in.maxRecord {
			// Unread: no payment is that large, and it could not go whole
			// to the dead-letter topic.
			refused[i] = refusal{reason: "too large: " + strconv.Itoa(n) + " bytes, over the intake's limit of " +
				strconv.Itoa(in.maxRecord), trimmed: true}
			continue
		}
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
			refused[i] = refusal{field: "paymentId", reason: "also at offset " + strconv.FormatInt(recs[j].Offset, 10) + " of partition " +
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
			refused[at[i]] = refusal{field: "tenantId", reason: "unknown tenant " + plaintext.Clip(reqs[i].TenantID, 64) + ": it has no account"}
			return false
		})
	}
	if len(reqs) > 0 {
		taken, err := in.cfg.Payments.Take(ctx, payment.Intake{Source: routing.SourceKafka, Requests: reqs})
		if err != nil {
			return fmt.Errorf("take %d payments: %w", len(reqs), err)
		}
		for _, le := range taken.Rejections {
			refused[at[le.Line-1]] = refusalOf(le)
		}
		in.cfg.Metrics.accepted(taken.Payments)
	}
	letters := make([]letter, 0, len(refused))
	for i, rf := range refused {
		letters = append(letters, letter{recs[i], rf})
	}
	return in.sendLetters(ctx, letters, lettered)
}

// refusalOf is a rejected payment's refusal: its first field, and every
// field's reason; an id conflict's, the conflict alone.
func refusalOf(le payment.LineError) refusal {
	if le.Conflict {
		return refusal{field: "paymentId", reason: "already used by this tenant for a different payment"}
	}
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
	return rf
}

// sendLetters puts letters on the dead-letter topic (those not there
// already). One the producer or the brokers find too large goes again by
// reference.
func (in *Intake) sendLetters(ctx context.Context, letters []letter, lettered map[*kgo.Record]bool) error {
	var todo []letter
	for _, l := range letters {
		if !lettered[l.rec] {
			todo = append(todo, l)
		}
	}
	for round := 0; len(todo) > 0; round++ {
		out := make([]*kgo.Record, len(todo))
		for i, l := range todo {
			out[i] = in.deadLetter(l.rec, l.rf)
		}
		errs, err := in.produce(ctx, out)
		if err != nil {
			return err
		}
		var again []letter
		var failed error
		for i, perr := range errs {
			switch {
			case perr == nil:
				lettered[todo[i].rec] = true
				in.cfg.Metrics.deadLettered(1, todo[i].rf.trimmed)
			case tooLarge(perr) && !todo[i].rf.trimmed:
				l := todo[i]
				l.rf.trimmed = true
				again = append(again, l)
			case failed == nil:
				failed = perr
			}
		}
		if failed != nil {
			return fmt.Errorf("dead-letter %d records: %w", len(todo), failed)
		}
		if len(again) > 0 {
			in.log.Warn("kafka intake: dead letters too large for the brokers; sending them by reference", "records", len(again))
		}
		todo = again
	}
	return nil
}

// produce sends recs and waits for their outcomes, one error (or nil)
// each, unless ctx ends first: a broker that never answers holds the
// intake no longer than its context.
func (in *Intake) produce(ctx context.Context, recs []*kgo.Record) ([]error, error) {
	errs := make([]error, len(recs))
	var wg sync.WaitGroup
	wg.Add(len(recs))
	for i, r := range recs {
		in.client.Produce(ctx, r, func(_ *kgo.Record, err error) {
			errs[i] = err
			wg.Done()
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return errs, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// tooLarge reports a record refused for its size, by the producer or a
// broker.
func tooLarge(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge)
}

// decode reads a record's payment request and its tenant.
func decode(rec *kgo.Record) (payment.Request, *refusal) {
	r, err := payment.DecodeRequest(rec.Value)
	if err != nil {
		return r, &refusal{reason: "unreadable: " + plaintext.Clip(err.Error(), 200)}
	}
	var header string
	for _, h := range rec.Headers {
		if h.Key == HeaderTenant {
			header = string(h.Value)
		}
	}
	switch {
	case r.TenantID == "" && header == "":
		return r, &refusal{field: "tenantId", reason: "required: in the value or a " + HeaderTenant + " header"}
	case r.TenantID == "":
		r.TenantID = header
	case header != "" && header != r.TenantID:
		return r, &refusal{field: "tenantId", reason: "the value's tenantId and the " + HeaderTenant + " header differ"}
	}
	if !field.ValidID(r.TenantID) {
		return r, &refusal{field: "tenantId", reason: "not a tenant id: 1 to 64 letters, digits, '-', '_' or '.'"}
	}
	return r, nil
}

// recordBytes is a record's size as the intake's limit counts it: its
// key, value and headers.
func recordBytes(r *kgo.Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// deadLetter is rec as a dead letter, keyed by its origin, the reason,
// the origin, the record's size and its value's SHA-256 in headers. Whole,
// it has the record's value and headers (less the producer's
// paydispatch-* ones); trimmed, neither, only a valid tenant-id header:
// the record is named by its origin and hash.
func (in *Intake) deadLetter(rec *kgo.Record, rf refusal) *kgo.Record {
	origin := rec.Topic + "/" + strconv.Itoa(int(rec.Partition)) + "/" + strconv.FormatInt(rec.Offset, 10)
	sum := sha256.Sum256(rec.Value)
	var hs []kgo.RecordHeader
	for _, h := range rec.Headers {
		switch {
		case len(h.Key) >= len(HeaderPrefix) && strings.EqualFold(h.Key[:len(HeaderPrefix)], HeaderPrefix):
		case !rf.trimmed, h.Key == HeaderTenant && field.ValidID(string(h.Value)):
			hs = append(hs, h)
		}
	}
	hs = append(hs,
		kgo.RecordHeader{Key: HeaderError, Value: []byte(plaintext.Clip(rf.reason, maxReason))},
		kgo.RecordHeader{Key: HeaderSourceTopic, Value: []byte(rec.Topic)},
		kgo.RecordHeader{Key: HeaderSourcePart, Value: []byte(strconv.Itoa(int(rec.Partition)))},
		kgo.RecordHeader{Key: HeaderSourceOffset, Value: []byte(strconv.FormatInt(rec.Offset, 10))},
		kgo.RecordHeader{Key: HeaderSourceSize, Value: []byte(strconv.Itoa(recordBytes(rec)))},
		kgo.RecordHeader{Key: HeaderSourceSHA256, Value: []byte(hex.EncodeToString(sum[:]))},
	)
	if rf.field != "" {
		hs = append(hs, kgo.RecordHeader{Key: HeaderErrorField, Value: []byte(plaintext.Clip(rf.field, 100))})
	}
	value := rec.Value
	if rf.trimmed {
		hs = append(hs, kgo.RecordHeader{Key: HeaderTrimmed, Value: []byte("true")})
		value = []byte{}
	}
	return &kgo.Record{Topic: in.cfg.DeadLetterTopic, Key: []byte(origin), Value: value, Headers: hs}
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
