package main

import (
	"context"
	"fmt"
	"io/fs"
	"runtime"
	"runtime/debug"

	"github.com/paydispatch/paydispatch/postgres"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

func runVersion(_ context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "version", "", "Prints the build's version, Go version and the schema version it migrates to.")
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "paydispatch %s (%s, schema version %d)\n", buildVersion(), runtime.Version(), latestSchemaVersion())
	return nil
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// latestSchemaVersion is the highest embedded migration number.
func latestSchemaVersion() int {
	entries, _ := fs.ReadDir(postgres.Migrations(), ".")
	latest := 0
	for _, e := range entries {
		var v int
		if _, err := fmt.Sscanf(e.Name(), "%d_", &v); err == nil && v > latest {
			latest = v
		}
	}
	return latest
}
