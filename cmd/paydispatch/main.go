// Command paydispatch executes payments scheduled for the same instant
// exactly once, at a controlled rate. Its subcommands run the service and
// its tooling; `paydispatch help` lists them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	usage   string // arguments after the name
	run     func(ctx context.Context, env *environment, args []string) error
}

// environment is what a command sees of the process.
type environment struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

func commands() []*command {
	return []*command{
		{name: "demo", summary: "run the main job end to end on a private stack, verify it and write a report", usage: "[flags]", run: runDemo},
		{name: "serve", summary: "run the service: store, migrations, HTTP API", usage: "[flags]", run: runServe},
		{name: "worker", summary: "run some roles (init, exec, dispatch) in their own process, for scale", usage: "--role ...", run: runWorker},
		{name: "relay", summary: "deliver the outbox's instructions to the rail (PAYDISPATCH_RAIL_URL), in its own process", usage: "[flags]", run: runRelay},
		{name: "kafka-intake", summary: "take payment requests from a Kafka topic, in its own process (serve does it too when PAYDISPATCH_KAFKA_BROKERS is set)", usage: "[flags]", run: runKafkaIntake},
		{name: "temporal", summary: "run only the embedded Temporal server, for worker and serve processes to share", usage: "[flags]", run: runTemporal},
		{name: "rail-sim", summary: "serve a simulated payment rail (GET /ledger shows what it received)", usage: "[flags]", run: runRailSim},
		{name: "screen-sim", summary: "serve a simulated screening service (seeded hits, a delay a call; GET /stats shows what it answered)", usage: "[flags]", run: runScreenSim},
		{name: "migrate", summary: "apply or inspect schema migrations", usage: "[up|status] [flags]", run: runMigrate},
		{name: "config", summary: "read or change an item type's dispatch settings at run time", usage: "get|set ...", run: runConfig},
		{name: "account", summary: "open a ledger account or show one", usage: "create|show ...", run: runAccount},
		{name: "fx-rate", summary: "set or list FX rates", usage: "set|list ...", run: runFXRate},
		{name: "payments", summary: "cancel a selection of payments (a tenant's, a file's) before their execution begins, release or reject held ones, pause and resume a tenant, a file or a rail, or change a waiting payment's priority", usage: "cancel|release|reject|pause|resume|pauses|priority ...", run: runPayments},
		{name: "rail", summary: "create, change, list or show the rails payments leave by (a rail's backlog and cut-off margin)", usage: "set|list|show ...", run: runRail},
		{name: "calendar", summary: "set, list or show the business-day calendars of rails", usage: "set|list|show ...", run: runCalendar},
		{name: "routing", summary: "set or list the routing rules that choose a payment's rail", usage: "set|list ...", run: runRouting},
		{name: "approval-rules", summary: "set or list a tenant's approval rules: the payments that wait for approvals (four eyes)", usage: "set|list ...", run: runApprovalRules},
		{name: "control-settings", summary: "set or list what a tenant's duplicate and screening controls do", usage: "set|list ...", run: runControlSettings},
		{name: "dead-letters", summary: "list the dead letters (the queue's, the outbox's) or requeue them through a rate-limit config", usage: "list|requeue ...", run: runDeadLetters},
		{name: "token", summary: "create, list or revoke API tokens", usage: "create|list|revoke ...", run: runToken},
		{name: "verify", summary: "check the ledger's and the payments' invariants; exit 1 on any violation", usage: "[flags]", run: runVerify},
		{name: "chaos", summary: "run payments through the roles as processes while killing them and breaking the database, Temporal and the rail; check every invariant", usage: "[flags]", run: runChaos},
		{name: "bench", summary: "run every benchmark (or one, by name) and print its figures beside their baselines", usage: "[NAME] [flags]", run: runBench},
		{name: "version", summary: "print the version", usage: "", run: runVersion},
	}
}

// usageError marks errors caused by how the command was called (exit 2).
type usageError struct{ error }

func main() {
	env := &environment{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	tuneGC(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, env, os.Args[1:]))
}

func run(ctx context.Context, env *environment, args []string) int {
	if len(args) == 0 {
		printUsage(env.stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 {
			if c := find(rest[0]); c != nil {
				return run(ctx, env, []string{c.name, "--help"})
			}
		}
		printUsage(env.stdout)
		return 0
	}
	c := find(name)
	if c == nil {
		fmt.Fprintf(env.stderr, "paydispatch: unknown command %q: run 'paydispatch help' for the list\n", name)
		return 2
	}
	err := c.run(ctx, env, rest)
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(env.stderr, "paydispatch %s: %v\n", c.name, err)
		return 2
	default:
		fmt.Fprintf(env.stderr, "paydispatch %s: %v\n", c.name, err)
		return 1
	}
}

func find(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "paydispatch executes payments scheduled for the same instant exactly once, at a controlled rate.")
	fmt.Fprintln(w, "\nUsage: paydispatch <command> [arguments]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\n'paydispatch <command> --help' describes a command's flags and environment variables.")
}

// newFlagSet makes a flag set whose --help prints the command's usage.
func newFlagSet(env *environment, name, usage, about string) *flag.FlagSet {
	fs := flag.NewFlagSet("paydispatch "+name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.stdout, "Usage: paydispatch %s %s\n\n%s\n\nFlags:\n", name, usage, about)
		fs.SetOutput(env.stdout)
		fs.PrintDefaults()
		fs.SetOutput(env.stderr)
	}
	return fs
}

// parse parses a command's flags, turning bad input into a usage error.
func parse(set interface{ Parse([]string) error }, args []string) error {
	return asUsage(set.Parse(args))
}

// parseWords parses flags given anywhere among a command's words and
// returns the words.
func parseWords(set *config.Set, args []string) ([]string, error) {
	words, err := set.ParseWords(args)
	return words, asUsage(err)
}

// asUsage marks a flag parsing error as bad input (exit 2).
func asUsage(err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usageError{err}
}
