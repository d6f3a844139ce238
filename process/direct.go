package process

import (
	"context"
	"fmt"
	"time"
)

// RunDirect drives a process in the calling goroutine, without Temporal:
// the same steps, transactions and decisions as Run, with Temporal's
// retries of infrastructure failures replaced by none — the first such
// error is returned, and the process stays where it was. For tools,
// benchmarks of the process store, and tests; a product's runs go through
// Run, whose workflow survives the process it runs in. A paused process is
// returned as it is (Outcome.Status PAUSED), not waited for.
func RunDirect(ctx context.Context, a *Activities, opts Options) (Outcome, error) {
	exec := opts.Exec.withDefaults()
	data, err := opts.startData()
	if err != nil {
		return Outcome{ProcessID: ID(opts.Type, opts.BusinessKey), Status: StatusNew}, err
	}
	st, err := a.Start(ctx, StartInput{Type: opts.Type, BusinessKey: opts.BusinessKey, Data: data})
	if err != nil {
		return Outcome{ProcessID: ID(opts.Type, opts.BusinessKey), Status: StatusNew}, fmt.Errorf("process %s/%s: start: %w", opts.Type, opts.BusinessKey, err)
	}
	for {
		if st, err = a.advance(ctx, st); err != nil {
			return Outcome{ProcessID: st.ProcessID, Status: st.Status, Step: st.Step}, err
		}
		done, wait, req := exec.plan(st)
		switch {
		case done:
			return st.outcome(), nil
		case st.Status == StatusPaused:
			return Outcome{ProcessID: st.ProcessID, Status: st.Status, Step: st.Step}, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return Outcome{ProcessID: st.ProcessID, Status: st.Status, Step: st.Step}, ctx.Err()
		case <-t.C:
		}
		res, err := a.Execute(ctx, req)
		if err != nil {
			return Outcome{ProcessID: st.ProcessID, Status: st.Status, Step: st.Step}, err
		}
		st = res.State
	}
}
