package bench

import (
	ptemporal "github.com/paydispatch/paydispatch/temporal"

	"fmt"
	"strconv"
	"time"

	"github.com/paydispatch/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/pacing"
)

// The benchmarks' flag kinds, each with a one-line error naming what it takes.

func intFlag(name string, def, lo, hi int, usage string, dst *int) *config.Setting {
	return &config.Setting{Flag: name, Default: strconv.Itoa(def), Usage: usage, Parse: func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("want a whole number from %d to %d", lo, hi)
		}
		*dst = n
		return nil
	}}
}

func durFlag(name, def string, least time.Duration, usage string, dst *time.Duration) *config.Setting {
	return &config.Setting{Flag: name, Default: def, Usage: usage, Parse: func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < least {
			return fmt.Errorf("want a duration of at least %s, e.g. 5s or 2m", least)
		}
		*dst = d
		return nil
	}}
}

func boolFlag(name, usage string, dst *bool) *config.Setting {
	return &config.Setting{Flag: name, Default: "false", Usage: usage, Bool: true, Parse: func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false, e.g. --%s=true", name)
		}
		*dst = b
		return nil
	}}
}

func isoFlag(name, def string, least time.Duration, usage string, dst *time.Duration) *config.Setting {
	return &config.Setting{Flag: name, Default: def, Usage: usage, Parse: func(v string) error {
		d, err := pacing.ParseISODuration(v)
		if err != nil || d < least {
			return fmt.Errorf("want an ISO-8601 duration of at least %s, such as PT4S", pacing.FormatISODuration(least))
		}
		*dst = d
		return nil
	}}
}

func storeFlag(dst *ptemporal.Store) *config.Setting {
	return &config.Setting{Flag: "temporal-store", Default: "auto", Usage: "where the embedded Temporal keeps its data: auto (PostgreSQL for a new store), postgres or sqlite",
		Parse: func(v string) (err error) { *dst, err = ptemporal.ParseStore(v); return err }}
}
