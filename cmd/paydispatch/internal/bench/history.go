package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/jackc/pgx/v5/pgxpool"
)

// historyShape reads the engine's history of a sample of the executions
// of these items (the run's, not a loaded history's) and prints what one costs the engine in events: its length, its workflow
// tasks, its markers (local activities and versions), its search
// attribute upserts (each a visibility write) and its size.
func historyShape(ctx context.Context, w io.Writer, pool *pgxpool.Pool, c client.Client, itemType string, items []string, sample int) error {
	rows, err := pool.Query(ctx, `SELECT exec_workflow_id FROM exec_queue
		WHERE item_type = $1 AND item_id = ANY($3) AND exec_workflow_id IS NOT NULL ORDER BY item_id LIMIT $2`, itemType, sample, items)
	if err != nil {
		return fmt.Errorf("bench: sample executions: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	var events, tasks, markers, upserts, bytes, read int
	byType := map[string]int{}
	var first []string // the first execution read, its events in order
	var firstID string
	firstAt := -1
	for i, id := range ids {
		it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for n := 0; it.HasNext(); n++ {
			ev, err := it.Next()
			var gone *serviceerror.NotFound
			if n == 0 && errors.As(err, &gone) {
				break // deleted at its retention
			}
			if err != nil {
				return fmt.Errorf("bench: history of %s: %w", id, err)
			}
			if n == 0 {
				read++
				if firstAt < 0 {
					firstAt, firstID = i, id
				}
			}
			events++
			bytes += proto.Size(ev)
			t := ev.GetEventType()
			kind := strings.ToLower(strings.TrimPrefix(t.String(), "EVENT_TYPE_"))
			byType[kind]++
			if i == firstAt {
				if m := ev.GetMarkerRecordedEventAttributes(); m != nil {
					kind += "(" + markerName(m) + ")"
				}
				first = append(first, kind)
			}
			switch t {
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				tasks++
			case enumspb.EVENT_TYPE_MARKER_RECORDED:
				markers++
			case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
				upserts++
			}
		}
	}
	if read == 0 {
		fmt.Fprintf(w, "an execution's history: the %d sampled were deleted at their retention\n", len(ids))
		return nil
	}
	n := float64(read)
	fmt.Fprintf(w, "an execution's history (mean of %d; %d of the sample deleted at their retention): %.1f events, %.1f workflow tasks, %.1f markers, %.1f search attribute upserts, %.0f bytes\n",
		read, len(ids)-read, float64(events)/n, float64(tasks)/n, float64(markers)/n, float64(upserts)/n, float64(bytes)/n)
	kinds := make([]string, 0, len(byType))
	for k := range byType {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	for i, k := range kinds {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %.1f", k, float64(byType[k])/n)
	}
	fmt.Fprintf(w, "  by event type: %s\n", b.String())
	fmt.Fprintf(w, "  %s: %s\n", firstID, strings.Join(first, " "))
	return nil
}

// markerName is what a marker records: a local activity's type, or a
// version's change id.
func markerName(m *historypb.MarkerRecordedEventAttributes) string {
	payload := func(key string) []byte {
		if p := m.GetDetails()[key]; p != nil && len(p.GetPayloads()) > 0 {
			return p.GetPayloads()[0].GetData()
		}
		return nil
	}
	var la struct{ ActivityType string }
	var change string
	switch {
	case json.Unmarshal(payload("data"), &la) == nil && la.ActivityType != "":
		return la.ActivityType
	case json.Unmarshal(payload("change-id"), &change) == nil:
		return "version " + change
	}
	return m.GetMarkerName()
}
