package ptr_test

import (
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/ptr"
)

func TestOptional(t *testing.T) {
	t.Parallel()
	if p := ptr.Optional(""); p != nil {
		t.Errorf(`Optional("") = %q, want nil`, *p)
	}
	if p := ptr.Optional("x"); p == nil || *p != "x" {
		t.Errorf(`Optional("x") = %v, want a pointer to "x"`, p)
	}
	if p := ptr.Optional(int32(0)); p != nil {
		t.Errorf("Optional(0) = %d, want nil", *p)
	}
	s := "a"
	if p := ptr.Optional(s); p == &s {
		t.Error("Optional returned its argument's address, want a copy")
	}
}

func TestDeref(t *testing.T) {
	t.Parallel()
	if got := ptr.Deref[string](nil); got != "" {
		t.Errorf("Deref(nil) = %q, want empty", got)
	}
	if got := ptr.Deref(new(int32)); got != 0 {
		t.Errorf("Deref(new(int32)) = %d", got)
	}
	s, n, at := "x", int32(7), time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	if ptr.Deref(&s) != "x" || ptr.Deref(&n) != 7 || !ptr.Deref(&at).Equal(at) {
		t.Error("Deref of a non-nil pointer is not its value")
	}
	if got := ptr.Deref[time.Time](nil); !got.IsZero() {
		t.Errorf("Deref of a nil time = %v, want the zero time", got)
	}
	if got := ptr.Deref(ptr.Optional("round")); got != "round" {
		t.Errorf("Deref(Optional(%q)) = %q", "round", got)
	}
}
