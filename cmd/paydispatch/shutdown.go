package main

import (
	"fmt"
	"sync/atomic"
	"time"
)

// parts are what a command started, to be stopped in the reverse order of
// their start.
type parts struct {
	names []string
	stops []func()
}

// add records a part started and the func that stops it.
func (p *parts) add(name string, stop func()) {
	p.names = append(p.names, name)
	p.stops = append(p.stops, stop)
}

// stopAll stops the parts, the last started first, and waits for each,
// however long it takes: for a start that failed, and the demo.
func (p *parts) stopAll() {
	for i := len(p.stops) - 1; i >= 0; i-- {
		p.stops[i]()
	}
	p.names, p.stops = nil, nil
}

// stopBy stops the parts as stopAll does, but returns by deadline
// whatever they do: a part still stopping then (a client waiting on a
// broker, a worker on an activity that ignores its context, a pool on a
// connection still held) is left behind with the parts started before
// it, and named in the error. The process exits around them as after a
// crash, which every part survives: a payment is stored with its status
// change, a rail call in doubt is settled by inquiry, a Kafka record not
// committed is read again, an embedded PostgreSQL stops with its parent.
func (p *parts) stopBy(deadline time.Time) error {
	names, stops := p.names, p.stops
	p.names, p.stops = nil, nil
	if len(stops) == 0 {
		return nil
	}
	var at atomic.Int64 // the part stopping
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := len(stops) - 1; i >= 0; i-- {
			at.Store(int64(i))
			stops[i]()
		}
	}()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		i := at.Load()
		return fmt.Errorf("shutdown timeout: %s still stopping; exiting without it and the %d parts started before it", names[i], i)
	}
}

// stopWithin is stopBy a limit from now; a limit of 0 waits as stopAll.
func (p *parts) stopWithin(limit time.Duration) error {
	if limit <= 0 {
		p.stopAll()
		return nil
	}
	return p.stopBy(time.Now().Add(limit))
}
