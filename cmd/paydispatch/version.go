package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/paydispatch/paydispatch/schema"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

func runVersion(_ context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "version", "", "Prints the build's version, Go version and the schema version it migrates to.")
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "paydispatch %s (%s, schema version %d)\n", buildVersion(), runtime.Version(), schema.Latest())
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
