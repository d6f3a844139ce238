package process

import (
	"encoding/json"
	"fmt"
)

// Replayed is what a process's log alone says of it.
type Replayed struct {
	Status       Status
	Step         string
	ResumeStatus Status
}

// Replay reconstructs a process's status and current step from its log
// entries (in seq order), without the instance row: an audit that the
// two agree, and the answer when they do not. An entry that cannot follow
// the ones before it is an error, naming its seq.
func Replay(entries []LogEntry) (Replayed, error) {
	var r Replayed
	for i, e := range entries {
		if err := r.apply(i, e); err != nil {
			return r, fmt.Errorf("process: replay: entry %d (seq %d, %s %q): %w", i, e.Seq, e.Event, e.Step, err)
		}
	}
	if len(entries) == 0 {
		return r, fmt.Errorf("process: replay: no entries")
	}
	return r, nil
}

func (r *Replayed) apply(i int, e LogEntry) error {
	if (i == 0) != (e.Event == EventProcessStarted) {
		return fmt.Errorf("ProcessStarted must be the first entry, and only the first")
	}
	// expect checks the status an event may follow, and, for a step's own
	// events, that it is the current step.
	expect := func(atStep bool, allowed ...Status) error {
		if !r.Status.in(allowed...) {
			return fmt.Errorf("not after status %s", r.Status)
		}
		if atStep && e.Step != r.Step {
			return fmt.Errorf("not at current step %q", r.Step)
		}
		return nil
	}
	var err error
	switch e.Event {
	case EventProcessStarted:
		r.Status, r.Step = StatusNew, e.Step
	case EventStepStarted:
		if err = expect(true, StatusNew, StatusRunning); err == nil {
			r.Status = StatusRunning
		}
	case EventStepFailed, EventStepTimedOut:
		err = expect(true, StatusRunning)
	case EventStepCompleted:
		if err = expect(true, StatusRunning); err == nil {
			err = r.moveTo(e)
		}
	case EventProcessCompleted:
		if err = expect(true, StatusRunning); err == nil {
			r.Status = StatusSucceeded
		}
	case EventProcessFailed:
		if err = expect(true, StatusRunning); err == nil {
			r.Status = StatusFailed
		}
	case EventOperatorCompensate:
		err = expect(false, StatusNew, StatusRunning, StatusPaused, StatusFailed)
	case EventProcessCompensating:
		if err = expect(false, StatusNew, StatusRunning, StatusPaused, StatusFailed); err == nil {
			r.Status, r.Step, r.ResumeStatus = StatusCompensating, e.Step, ""
		}
	case EventCompensationStarted, EventCompensationFailed:
		err = expect(true, StatusCompensating)
	case EventCompensationCompleted:
		if err = expect(true, StatusCompensating); err == nil {
			err = r.moveTo(e)
		}
	case EventProcessCompensated:
		if err = expect(false, StatusCompensating, StatusNew, StatusRunning, StatusPaused, StatusFailed); err == nil {
			r.Status, r.ResumeStatus = StatusCompensated, ""
		}
	case EventProcessCompensationFailed:
		if err = expect(true, StatusCompensating); err == nil {
			r.Status = StatusCompensationFailed
		}
	case EventProcessPaused:
		if err = expect(false, StatusNew, StatusRunning, StatusCompensating); err == nil {
			r.Status, r.ResumeStatus = StatusPaused, r.Status
		}
	case EventProcessResumed:
		if err = expect(false, StatusPaused); err == nil {
			r.Status, r.ResumeStatus = r.ResumeStatus, ""
		}
	case EventOperatorRetry:
		switch r.Status {
		case StatusFailed:
			r.Status, r.Step = StatusRunning, e.Step
		case StatusCompensationFailed:
			r.Status, r.Step = StatusCompensating, e.Step
		default:
			err = fmt.Errorf("not after status %s", r.Status)
		}
	case EventRunnerAttached:
		err = expect(false, StatusNew, StatusRunning, StatusCompensating, StatusPaused)
	default:
		err = fmt.Errorf("unknown event")
	}
	return err
}

// moveTo follows a completed step or compensation to the next one its
// entry names; the last one stays current.
func (r *Replayed) moveTo(e LogEntry) error {
	var d struct {
		Next string `json:"next"`
	}
	if err := json.Unmarshal(e.Detail, &d); err != nil {
		return fmt.Errorf("detail: %w", err)
	}
	if d.Next != "" {
		r.Step = d.Next
	}
	return nil
}
