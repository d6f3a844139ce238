package process

import (
	"context"
	"fmt"
)

// Mismatch is a process whose stored status disagrees with what its log
// alone says (Replay), or whose log does not replay.
type Mismatch struct {
	Instance Instance
	Replayed Replayed
	Err      error
}

func (m Mismatch) String() string {
	if m.Err != nil {
		return fmt.Sprintf("process %s (%s %s): its log does not replay: %v", m.Instance.ID, m.Instance.Type, m.Instance.BusinessKey, m.Err)
	}
	return fmt.Sprintf("process %s (%s %s) is %s at %q, its log says %s at %q",
		m.Instance.ID, m.Instance.Type, m.Instance.BusinessKey, m.Instance.Status, m.Instance.Step, m.Replayed.Status, m.Replayed.Step)
}

// allStatuses are every status a process can have.
var allStatuses = []Status{StatusNew, StatusRunning, StatusSucceeded, StatusFailed,
	StatusCompensating, StatusCompensated, StatusPaused, StatusCompensationFailed}

// Verify replays every process's log and lists those that disagree with
// their stored status, current step or resume status: the log is the
// audit trail, so the two must never part.
func Verify(ctx context.Context, db DB) ([]Mismatch, error) {
	var out []Mismatch
	for _, st := range allStatuses {
		for cursor := ""; ; {
			page, next, err := List(ctx, db, st, MaxListLimit, cursor)
			if err != nil {
				return out, err
			}
			for _, inst := range page {
				entries, err := Log(ctx, db, inst.ID)
				if err != nil {
					return out, err
				}
				got, err := Replay(entries)
				want := Replayed{Status: inst.Status, Step: inst.Step, ResumeStatus: inst.ResumeStatus}
				if err != nil || got != want {
					out = append(out, Mismatch{Instance: inst, Replayed: got, Err: err})
				}
			}
			if next == "" {
				break
			}
			cursor = next
		}
	}
	return out, nil
}
