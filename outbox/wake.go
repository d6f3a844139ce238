package outbox

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/wait"
)

// notifyChannel is the channel payment_outbox_pending's insert trigger
// notifies.
const notifyChannel = "outbox_pending"

// listen holds a connection of its own LISTENing on outbox_pending (not a
// pool connection: it must stay with this session for as long as the
// relayer runs) and wakes the relayer through the debouncer. A dropped
// connection is reopened with backoff; each (re)start wakes the relayer
// once, for whatever was notified while nobody listened.
func (r *Relayer) listen(ctx context.Context) {
	d := newDebouncer(r.cfg.Debounce, func() {
		r.m.notifyWakeup()
		r.wakeUp()
	})
	defer d.stop()
	failures := 0
	for ctx.Err() == nil {
		err := r.listenOnce(ctx, d, func() { failures = 0 })
		if ctx.Err() != nil {
			return
		}
		failures++
		backoff := min(100*time.Millisecond<<min(failures, 6), 5*time.Second)
		r.cfg.Logger.Warn("outbox listener lost its connection; reconnecting", "relayer", r.cfg.ID, "err", err, "retry_in", backoff)
		if !wait.For(ctx, backoff) {
			return
		}
	}
}

func (r *Relayer) listenOnce(ctx context.Context, d *debouncer, listening func()) error {
	cfg := r.cfg.Pool.Config().ConnConfig.Copy()
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = "paydispatch-outbox-listener"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	listening()
	r.wakeUp()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		r.m.notification()
		d.poke()
	}
}

// poll wakes the relayer every PollInterval: the fallback when
// notifications are lost (listener reconnecting) or switched off.
func (r *Relayer) poll(ctx context.Context) {
	t := time.NewTicker(r.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.wakeUp()
		}
	}
}

// debouncer fires at once on the first poke after a quiet spell, and once
// more when the window ends, and again at the end of every further window
// with pokes in it: a burst of notifications costs a pass per window, the
// first one's latency is not the window's, and the pass at the window's
// end sees the commits that skipped their own notification because
// another one's was under way (see the trigger in the migration).
type debouncer struct {
	window time.Duration
	fire   func()

	mu      sync.Mutex
	timer   *time.Timer // set while a window is open
	dirty   bool        // a pass is due at the window's end
	stopped bool
}

func newDebouncer(window time.Duration, fire func()) *debouncer {
	return &debouncer{window: window, fire: fire}
}

func (d *debouncer) poke() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return
	}
	d.dirty = true
	if d.timer != nil {
		return
	}
	d.fire()
	d.timer = time.AfterFunc(d.window, d.windowEnd)
}

func (d *debouncer) windowEnd() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped || !d.dirty {
		d.timer = nil
		return
	}
	d.dirty = false
	d.fire()
	d.timer = time.AfterFunc(d.window, d.windowEnd)
}

func (d *debouncer) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	if d.timer != nil {
		d.timer.Stop()
	}
}
