package bench

import (
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/pacing"
	ptemporal "github.com/paydispatch/paydispatch/temporal"
)

// isoFlag is an ISO-8601 duration (a pacing window) of at least least.
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
	return &config.Setting{Flag: "temporal-store", Default: "auto", Usage: "where the embedded Temporal keeps its data: auto (a new store gets SQLite), sqlite or postgres",
		Parse: func(v string) (err error) { *dst, err = ptemporal.ParseStore(v); return err }}
}
