package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/rail"
)

// baseline is the simulator's accept rate from a plain HTTP client loop:
// pre-encoded JSON sends with their headers, from as many clients as a
// relayer makes calls at once, on the adapters' transport. What a relayer
// adds (claims, records, validation, rendering) shows against it.
func (b *outboxBench) baseline(ctx context.Context) (float64, error) {
	n := max(b.o.N/2, 2000)
	bodies := make([][]byte, n)
	for i := range bodies {
		id := "base-" + strconv.Itoa(i)
		var in rail.Instruction
		_ = json.Unmarshal(payload(id), &in)
		bodies[i], _ = json.Marshal(rail.JSONRequest{Instruction: in, ParticipantID: "baseline", SequenceID: int64(i + 1)})
	}
	client := &http.Client{Transport: rail.NewTransport()}
	return concurrently(ctx, b.o.Concurrency, n, func(ctx context.Context, i int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url+rail.PathInstructions, bytes.NewReader(bodies[i]))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(rail.HeaderIdempotencyKey, "key-base-"+strconv.Itoa(i))
		req.Header.Set(rail.HeaderParticipantID, "baseline")
		req.Header.Set(rail.HeaderSequenceID, strconv.Itoa(i+1))
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("send %d: %s", i, resp.Status)
		}
		return nil
	})
}

// latency runs one relayer, with NOTIFY or poll-only, while a producer
// commits one instruction per transaction at rate per second for
// LatencyFor, and returns the percentiles of commit → receipt and how
// many instructions there were.
func (b *outboxBench) latency(ctx context.Context, rate int, notify bool) (latencies, int, error) {
	stop, err := b.startRelayers(ctx, 1, !notify)
	if err != nil {
		return latencies{}, 0, err
	}
	defer stop()
	if notify {
		if err := b.waitListener(ctx); err != nil {
			return latencies{}, 0, err
		}
	}
	prefix := fmt.Sprintf("lat-%d-%t-", rate, notify)
	committed := map[string]time.Time{}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for end, i := time.Now().Add(b.o.LatencyFor), 0; time.Now().Before(end); i++ {
		<-tick.C
		in := benchInstruction(prefix+strconv.Itoa(i), prefix+strconv.Itoa(i%8), rail.RailSEPAJSON)
		err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			_, _, _, err := outbox.Enqueue(ctx, tx, in)
			return err
		})
		if err != nil {
			return latencies{}, 0, err
		}
		// The commit has returned: the producer knows it is durable.
		committed[in.IdempotencyKey] = time.Now()
	}
	var lat []time.Duration
	deadline := time.Now().Add(time.Minute)
	for key, at := range committed {
		for {
			got, ok := b.sim.ReceivedAt(key)
			if ok {
				// A receipt before the producer saw its commit return is
				// possible (the commit is visible first): count it as 0.
				lat = append(lat, max(got.Sub(at), 0))
				break
			}
			if time.Now().After(deadline) {
				return latencies{}, 0, fmt.Errorf("%s not received a minute after the run", key)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return latencies{p50: percentile(lat, 50), p99: percentile(lat, 99)}, len(committed), nil
}

type drainResult struct {
	rate     float64       // instructions per second at the rail
	received time.Duration // relayers' start → last receipt
	recorded time.Duration // relayers' start → the outbox empty (every outcome recorded)
}

// drain enqueues n instructions over participants in the given mode,
// then starts the relayers and times the rail's receipts.
func (b *outboxBench) drain(ctx context.Context, prefix string, n, participants int, mode outbox.Ordering) (drainResult, error) {
	parts := make([]string, participants)
	for i := range parts {
		parts[i] = fmt.Sprintf("%s-%03d", prefix, i)
		if mode == outbox.Strict {
			if err := outbox.SetOrdering(ctx, b.pool, parts[i], outbox.Strict); err != nil {
				return drainResult{}, err
			}
		}
	}
	keys := make([]string, 0, n)
	for lo := 0; lo < n; lo += 1000 {
		batch := make([]outbox.Instruction, 0, 1000)
		for i := lo; i < min(lo+1000, n); i++ {
			in := benchInstruction(prefix+"-"+strconv.Itoa(i), parts[i%participants], b.o.RailType)
			batch = append(batch, in)
			keys = append(keys, in.IdempotencyKey)
		}
		err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			_, err := outbox.EnqueueBatch(ctx, tx, batch)
			return err
		})
		if err != nil {
			return drainResult{}, err
		}
	}
	if _, err := b.pool.Exec(ctx, "VACUUM ANALYZE payment_outbox_pending"); err != nil {
		return drainResult{}, err
	}
	base := b.sim.Ledger().Unique
	start := time.Now()
	stop, err := b.startRelayers(ctx, b.o.Relayers, false)
	if err != nil {
		return drainResult{}, err
	}
	defer stop()
	deadline := start.Add(10 * time.Minute)
	for b.sim.Ledger().Unique-base < int64(n) {
		if time.Now().After(deadline) {
			return drainResult{}, fmt.Errorf("%d of %d received after 10 minutes", b.sim.Ledger().Unique-base, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var last time.Time
	for _, k := range keys {
		at, ok := b.sim.ReceivedAt(k)
		if !ok {
			return drainResult{}, fmt.Errorf("%s never received", k)
		}
		if at.After(last) {
			last = at
		}
	}
	for {
		d, err := outbox.ReadDepth(ctx, b.pool, time.Minute)
		if err != nil {
			return drainResult{}, err
		}
		if d.Pending == 0 && d.InFlight == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	res := drainResult{received: last.Sub(start), recorded: time.Since(start)}
	res.rate = float64(n) / res.received.Seconds()
	return res, nil
}

// startRelayers starts n relayers as serve does (app.StartRelayer, serve's
// defaults but for Concurrency and the wake-up mode) on the simulator;
// the returned func stops them all.
func (b *outboxBench) startRelayers(ctx context.Context, n int, pollOnly bool) (func(), error) {
	var stops []func()
	stopAll := func() {
		for _, s := range stops {
			s()
		}
	}
	for range n {
		stop, err := app.StartRelayer(ctx, b.store, app.RelayConfig{
			RailURL: b.url,
			Relayer: outbox.Config{Concurrency: b.o.Concurrency, DisableNotify: pollOnly},
		}, payment.OutboxHooks(), nil, b.o.Logger)
		if err != nil {
			stopAll()
			return nil, err
		}
		stops = append(stops, stop)
	}
	return stopAll, nil
}

// waitListener waits until a relayer LISTENs on this database.
func (b *outboxBench) waitListener(ctx context.Context) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = 'paydispatch-outbox-listener'`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			time.Sleep(50 * time.Millisecond) // its LISTEN follows the connect
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no relayer LISTENs after 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
