package config

import (
	"fmt"
	"strconv"
	"time"

	"github.com/paydispatch/paydispatch/queue"
)

// Flag-only settings of the common kinds (no environment variable), each
// with a one-line error naming what it takes: the benchmarks' and the
// demo's flags.

// Int is a whole number from lo to hi.
func Int(name string, def, lo, hi int, usage string, dst *int) *Setting {
	return &Setting{Flag: name, Default: strconv.Itoa(def), Usage: usage, Parse: func(v string) error {
		n, err := intIn(v, lo, hi)
		if err != nil {
			return err
		}
		*dst = n
		return nil
	}}
}

// Duration is a Go duration of at least least.
func Duration(name, def string, least time.Duration, usage string, dst *time.Duration) *Setting {
	return &Setting{Flag: name, Default: def, Usage: usage, Parse: func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < least {
			return fmt.Errorf("want a duration of at least %s, e.g. 5s or 2m", least)
		}
		*dst = d
		return nil
	}}
}

// Bool is a flag given bare (--name) or as --name=true|false.
func Bool(name, usage string, dst *bool) *Setting {
	return &Setting{Flag: name, Default: "false", Usage: usage, Bool: true, Parse: func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false, e.g. --%s=true", name)
		}
		*dst = b
		return nil
	}}
}

// ExecMode is --exec-mode: an item type's exec_mode for a run, PER_ITEM or
// BATCH; empty (not given) leaves it as configured.
func ExecMode(usage string, dst *string) *Setting {
	return &Setting{Flag: "exec-mode", Usage: usage, Parse: func(v string) error {
		if m := queue.ExecMode(v); v != "" && m != queue.ExecPerItem && m != queue.ExecBatch {
			return fmt.Errorf("want %s or %s", queue.ExecPerItem, queue.ExecBatch)
		}
		*dst = v
		return nil
	}}
}

// The kinds of a setting with its environment variable (a flag-only one
// is Int, Duration, Bool above): each parses into dst and says, when it
// cannot, what it takes.

// IntVar is a whole number from lo to hi.
func IntVar(flag, env, def string, lo, hi int, usage string, dst *int) *Setting {
	return &Setting{Flag: flag, Env: env, Default: def, Usage: usage, Parse: func(v string) error {
		n, err := intIn(v, lo, hi)
		*dst = n
		return err
	}}
}

// DurationVar is a Go duration from lo to hi.
func DurationVar(flag, env, def string, lo, hi time.Duration, usage string, dst *time.Duration) *Setting {
	return &Setting{Flag: flag, Env: env, Default: def, Usage: usage, Parse: func(v string) error {
		d, err := durationIn(v, lo, hi)
		*dst = d
		return err
	}}
}

// BoolVar is true or false; the flag may stand alone.
func BoolVar(flag, env, def, usage string, dst *bool) *Setting {
	return &Setting{Flag: flag, Env: env, Default: def, Usage: usage, Bool: true, Parse: func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		*dst = b
		return nil
	}}
}
