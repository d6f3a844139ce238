package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

// OutboxOptions configure the outbox benchmark.
type OutboxOptions struct {
	Env

	N                  int // instructions of the throughput-mode drain
	StrictN            int // instructions of the strict-mode drain
	Participants       int // of the throughput drain
	StrictParticipants int
	Relayers           int           // relayers in the drains (one in the latency runs)
	Concurrency        int           // rail calls at once per relayer, and the baseline's clients
	Rates              []int         // instructions per second of the latency runs
	LatencyFor         time.Duration // how long each latency run produces
	RailType           string        // of the drains: rail.RailSEPAJSON or rail.RailPacs008
	Quick              bool
	Ephemeral          bool
}

// OutboxSettings binds the benchmark's flags.
func OutboxSettings(o *OutboxOptions) []*config.Setting {
	return []*config.Setting{
		config.Int("n", 20_000, 100, 5_000_000, "instructions of the throughput-mode drain", &o.N),
		config.Int("strict-n", 4000, 10, 1_000_000, "instructions of the strict-mode drain", &o.StrictN),
		config.Int("participants", 20, 1, 10_000, "participants of the throughput-mode drain", &o.Participants),
		config.Int("strict-participants", 8, 1, 10_000, "participants of the strict-mode drain", &o.StrictParticipants),
		config.Int("relayers", 2, 1, 16, "relayers in the drains (the latency runs use one)", &o.Relayers),
		config.Int("concurrency", 64, 1, 4096, "rail calls at once per relayer, and the baseline's HTTP clients", &o.Concurrency),
		{Flag: "rates", Default: "200,20", Usage: "instructions per second of the latency runs, comma-separated",
			Parse: func(v string) error {
				o.Rates = nil
				for _, f := range strings.Split(v, ",") {
					n, err := strconv.Atoi(strings.TrimSpace(f))
					if err != nil || n < 1 || n > 2000 {
						return fmt.Errorf("want rates from 1 to 2000 per second, comma-separated, e.g. 200,20")
					}
					o.Rates = append(o.Rates, n)
				}
				return nil
			}},
		config.Duration("latency-for", "10s", time.Second, "how long each latency run produces", &o.LatencyFor),
		{Flag: "rail-type", Default: rail.RailSEPAJSON, Usage: "the drains' rail: SEPA_JSON (JSON) or PACS008 (ISO 20022 pacs.008)",
			Parse: func(v string) error {
				if v != rail.RailSEPAJSON && v != rail.RailPacs008 {
					return fmt.Errorf("want %s or %s", rail.RailSEPAJSON, rail.RailPacs008)
				}
				o.RailType = v
				return nil
			}},
		config.Bool("quick", "a short run: 5,000 and 1,000 instructions, 3 s latency runs", &o.Quick),
		config.Bool("ephemeral", "run the private PostgreSQL without fsync (not the product's setting)", &o.Ephemeral),
	}
}

// RunOutbox measures the outbox against the rail simulator in this
// process (no added latency), with the relayer serve runs
// (app.StartRelayer): the simulator's raw accept rate from a plain HTTP
// client loop (the baseline); latency from the producer's commit to the
// rail's receipt with NOTIFY and poll-only; and drains in throughput and
// strict mode. It prints the figures, the machine's cores and the CPU the
// hypervisor stole meanwhile.
func RunOutbox(ctx context.Context, o OutboxOptions) error {
	if o.Quick {
		o.N, o.StrictN, o.LatencyFor = min(o.N, 5000), min(o.StrictN, 1000), min(o.LatencyFor, 3*time.Second)
	}
	runStart, _ := readCPU()
	pool, where, cleanup, err := benchDatabase(ctx, dbOptions{URL: o.DatabaseURL, BinDir: o.PGBinDir, Ephemeral: o.Ephemeral,
		Logger: o.Logger, MaxConns: int32(8 + 8*o.Relayers)})
	if err != nil {
		return err
	}
	defer cleanup()
	if _, err := app.Migrate(ctx, pool, nil); err != nil {
		return err
	}
	sim := railsim.New(railsim.Options{})
	simURL, stopSim, err := sim.Start(ctx, "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer stopSim()
	b := &outboxBench{o: o, pool: pool, store: &postgres.DB{Pool: pool}, sim: sim, url: simURL}
	b.header(ctx, where)

	phase, _ := readCPU()
	base, err := b.baseline(ctx)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	b.printf("\nbaseline, the simulator's raw accept rate: a plain HTTP client loop, %d clients, pre-encoded JSON sends:\n", o.Concurrency)
	b.printf("  %9.0f sends/s%s\n", base, b.stolen(phase))

	b.printf("\nlatency, producer's commit → rail's receipt: one instruction per transaction at a steady rate for %v,\n", o.LatencyFor)
	b.printf("  one relayer with serve's defaults (debounce 25 ms, poll 500 ms):\n")
	for _, rate := range o.Rates {
		for _, notify := range []bool{true, false} {
			phase, _ := readCPU()
			lat, n, err := b.latency(ctx, rate, notify)
			if err != nil {
				return fmt.Errorf("latency: %w", err)
			}
			mode, target := "poll only    ", ""
			if notify {
				mode, target = "NOTIFY + poll", "  target p50 ≤ 10 ms: "+verdict(lat.p50 <= 10*time.Millisecond)
			}
			b.printf("  %4d/s  %s  p50 %8.2f ms  p99 %8.2f ms  (%s instructions)%s%s\n", rate, mode, ms(lat.p50), ms(lat.p99),
				thousands(n), target, b.stolen(phase))
		}
	}

	b.printf("\ndrains: instructions enqueued beforehand, delivered by %d relayers (%d rail calls at once each), rail type %s:\n",
		o.Relayers, o.Concurrency, o.RailType)
	phase, _ = readCPU()
	tp, err := b.drain(ctx, "tp", o.N, o.Participants, outbox.Throughput)
	if err != nil {
		return fmt.Errorf("throughput drain: %w", err)
	}
	b.printf("  throughput mode, %s over %d participants: %8.0f instr/s at the rail (%.2f × baseline; last receipt %.2f s, all recorded %.2f s)%s\n",
		thousands(o.N), o.Participants, tp.rate, quotient(tp.rate, base), tp.received.Seconds(), tp.recorded.Seconds(), b.stolen(phase))
	phase, _ = readCPU()
	st, err := b.drain(ctx, "st", o.StrictN, o.StrictParticipants, outbox.Strict)
	if err != nil {
		return fmt.Errorf("strict drain: %w", err)
	}
	b.printf("  strict mode,     %s over %d participants: %8.0f instr/s at the rail (%.2f × baseline; last receipt %.2f s, all recorded %.2f s)%s\n",
		thousands(o.StrictN), o.StrictParticipants, st.rate, quotient(st.rate, base), st.received.Seconds(), st.recorded.Seconds(), b.stolen(phase))
	b.printf("  target ≥ 5,000 instr/s in throughput mode: %s\n", verdict(tp.rate >= 5000))
	o.Figures.add(Figure{What: "relayed, throughput mode", Value: tp.rate, Unit: "instr/s",
		Baseline: "plain HTTP client loop to the simulator", BaseVal: base, BaseUnit: "sends/s"})
	o.Figures.add(Figure{What: "relayed, strict mode", Value: st.rate, Unit: "instr/s",
		Baseline: "plain HTTP client loop to the simulator", BaseVal: base, BaseUnit: "sends/s"})

	l := sim.Ledger()
	reordered := int64(0)
	for id, p := range l.Participants {
		if strings.HasPrefix(id, "st-") {
			reordered += p.Reordered + p.Gaps
		}
	}
	b.printf("\ncheck: the rail received %s instructions, duplicates %d, strict participants out of sequence %d: %s\n",
		thousands(int(l.Unique)), l.Duplicates, reordered, verdict(l.Duplicates == 0 && reordered == 0))
	b.printf("CPU stolen by the hypervisor over the whole run:%s\n", b.stolen(runStart))
	return nil
}

type outboxBench struct {
	o     OutboxOptions
	pool  *pgxpool.Pool
	store *postgres.DB
	sim   *railsim.Simulator
	url   string
}

func (b *outboxBench) printf(format string, args ...any) { fmt.Fprintf(b.o.Out, format, args...) }

func (b *outboxBench) header(ctx context.Context, where string) {
	var version, syncCommit, fsync, sharedBuffers string
	_ = b.pool.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('synchronous_commit'),
		current_setting('fsync'), current_setting('shared_buffers')`).Scan(&version, &syncCommit, &fsync, &sharedBuffers)
	b.printf("paydispatch bench outbox: %d CPUs, %s, PostgreSQL %s (%s; fsync=%s, synchronous_commit=%s, shared_buffers=%s);\n",
		runtime.NumCPU(), memTotal(), version, where, fsync, syncCommit, sharedBuffers)
	b.printf("  rail simulator in this process on %s, no added latency\n", b.url)
}

// stolen is the share of CPU stolen since start, for a figure's line.
func (b *outboxBench) stolen(start cpuTimes) string {
	s, ok := stolenSince(start)
	if !ok {
		return ""
	}
	return fmt.Sprintf("  [steal %.1f %%]", 100*s)
}

// payload is a valid instruction for the rail adapters.
func payload(id string) json.RawMessage {
	p, _ := json.Marshal(rail.Instruction{
		PaymentID: id, EndToEndID: "E2E-" + id, Amount: "125.00", Currency: "EUR", ValueDate: "2026-11-23",
		Debtor:   rail.Debtor{Name: "ACME Corp", Account: "ACC-1", BIC: "NWBKGB2L"},
		Creditor: rail.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"},
		TenantID: "acme", RemittanceInfo: "INV-42",
	})
	return p
}

func benchInstruction(id, participant, railType string) outbox.Instruction {
	return outbox.Instruction{InstructionID: id, ParticipantID: participant, IdempotencyKey: "key-" + id, RailType: railType, Payload: payload(id)}
}
