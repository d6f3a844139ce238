package devserver

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStorePartitions: a new store gets the wanted count and remembers it;
// a store from before the marker keeps Temporal's 4, so no persisted task
// is left in a partition nobody reads; a bad marker is an error.
func TestStorePartitions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := func(name string) string { return filepath.Join(dir, name) }
	if err := os.WriteFile(db("bad.db.partitions"), []byte("many"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		created bool
		want    int
		got     int
		wantErr bool
	}{
		{"in memory", "", true, 0, 1, false},
		{"new store, default", db("new.db"), true, 0, 1, false},
		{"the same store again", db("new.db"), false, 8, 1, false},
		{"new store, two", db("two.db"), true, 2, 2, false},
		{"store from before the marker", db("old.db"), false, 0, 4, false},
		{"bad marker", db("bad.db"), false, 0, 0, true},
	}
	for _, tt := range tests { // in order: "again" reads what "new" wrote
		got, err := storePartitions(tt.path, tt.created, tt.want)
		if (err != nil) != tt.wantErr || got != tt.got {
			t.Errorf("%s: %d, %v; want %d (error %t)", tt.name, got, err, tt.got, tt.wantErr)
		}
	}
}
