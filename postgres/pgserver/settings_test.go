package pgserver

import "testing"

func TestSharedBuffers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		limit int64
		want  string
	}{
		{256 << 20, "128MB"}, // a small container: PostgreSQL's own default
		{4 << 30, "1024MB"},
		{24 << 30, "6144MB"},
		{256 << 30, "8192MB"}, // capped: the kernel's page cache does the rest
	} {
		if got := sharedBuffers(tt.limit); got != tt.want {
			t.Errorf("sharedBuffers(%d MB) = %s, want %s", tt.limit>>20, got, tt.want)
		}
	}
	if l := memoryLimit(); l <= 0 {
		t.Errorf("memoryLimit() = %d", l)
	}
}
