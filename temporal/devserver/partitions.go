package devserver

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// temporalDefaultPartitions is Temporal's own number of task-queue
// partitions, which stores created before paydispatch chose 1 were run
// with.
const temporalDefaultPartitions = 4

// storePartitions decides the task-queue partitions a store runs with and
// remembers it beside the store (<DBPath>.partitions). Fewer read
// partitions than a store was run with would strand the tasks persisted in
// the others — workflow tasks no poller would ever see, payments that
// never execute — so a store keeps the count it was created with: a new
// store gets want (1 unless set), one created before the marker existed
// Temporal's 4. An in-memory store (path "") is always new.
func storePartitions(path string, created bool, want int) (int, error) {
	if want <= 0 {
		want = 1
	}
	if path == "" {
		return want, nil
	}
	marker := path + ".partitions"
	if created {
		if err := os.WriteFile(marker, []byte(strconv.Itoa(want)+"\n"), 0o600); err != nil {
			return 0, fmt.Errorf("temporal: remember the task-queue partitions: %w", err)
		}
		return want, nil
	}
	b, err := os.ReadFile(marker)
	if errors.Is(err, os.ErrNotExist) {
		return temporalDefaultPartitions, nil
	}
	if err != nil {
		return 0, fmt.Errorf("temporal: read the task-queue partitions: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("temporal: %s: %q is not a partition count; it holds the count the store was created with", marker, strings.TrimSpace(string(b)))
	}
	return n, nil
}
