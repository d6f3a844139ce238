package bench

import (
	"io"
	"log/slog"
)

// Env is what every benchmark is given beside its own options, by the
// command that runs it.
type Env struct {
	// DatabaseURL, for the benchmarks on a throw-away database (queue,
	// pacing, saga, outbox), is where to make a scratch schema; empty, or
	// for the others: a fresh private server in a temporary directory.
	DatabaseURL string
	// PGBinDir is where the private server's binaries are ("": found).
	PGBinDir string
	Out      io.Writer
	Logger   *slog.Logger
	// Figures, when set, receives the headline (paydispatch bench).
	Figures *Figures
}

// SetEnv sets the Env of the options it is embedded in.
func (e *Env) SetEnv(env Env) { *e = env }
