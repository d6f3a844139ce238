package process

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/paydispatch/paydispatch/process/internal/dbsqlc"
)

// Mismatch is a process whose stored status disagrees with what its log
// alone says (Replay), or whose log does not replay.
type Mismatch struct {
	Instance Instance
	Replayed Replayed
	Err      error
	// Listing is set when the operator listing (process_attention)
	// disagrees with the stored status: it lists the process as
	// ListedAs, "" for not at all.
	Listing  bool
	ListedAs Status
}

func (m Mismatch) String() string {
	if m.Listing {
		listed := "does not list it"
		if m.ListedAs != "" {
			listed = "lists it as " + string(m.ListedAs)
		}
		return fmt.Sprintf("process %s (%s %s) is %s, and its operator listing %s", m.Instance.ID, m.Instance.Type, m.Instance.BusinessKey, m.Instance.Status, listed)
	}
	if m.Err != nil {
		return fmt.Sprintf("process %s (%s %s): its log does not replay: %v", m.Instance.ID, m.Instance.Type, m.Instance.BusinessKey, m.Err)
	}
	return fmt.Sprintf("process %s (%s %s) is %s at %q, its log says %s at %q",
		m.Instance.ID, m.Instance.Type, m.Instance.BusinessKey, m.Instance.Status, m.Instance.Step, m.Replayed.Status, m.Replayed.Step)
}

// Verify replays every process's log and lists those that disagree with
// their stored status, current step or resume status: the log is the
// audit trail, so the two must never part. It also lists a process whose
// operator listing (process_attention) is missing, extra or says another
// status.
func Verify(ctx context.Context, db DB) ([]Mismatch, error) {
	var out []Mismatch
	q := dbsqlc.New(db)
	for after := uuid.Nil; ; {
		rows, err := q.ListAll(ctx, dbsqlc.ListAllParams{AfterID: after, MaxRows: MaxListLimit})
		if err != nil {
			return out, fmt.Errorf("process: verify: %w", err)
		}
		for _, r := range rows {
			inst := fromRow(r)
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
		if len(rows) < MaxListLimit {
			break
		}
		after = rows[len(rows)-1].ProcessID
	}
	listed, err := q.AttentionDisagrees(ctx)
	if err != nil {
		return out, fmt.Errorf("process: verify the listing: %w", err)
	}
	for _, l := range listed {
		inst, err := Get(ctx, db, l.ProcessID)
		if err != nil { // listed, and not there at all
			inst = Instance{ID: l.ProcessID, Status: "(none)"}
		}
		out = append(out, Mismatch{Instance: inst, Listing: true, ListedAs: Status(l.ListedAs)})
	}
	return out, nil
}
