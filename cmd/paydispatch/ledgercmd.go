package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/fx"
	"github.com/paydispatch/paydispatch/ledger/limit"
	"github.com/paydispatch/paydispatch/ledger/service"
	"github.com/paydispatch/paydispatch/money"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
)

// limitFlags collects repeated --limit PERIOD=AMOUNT.
type limitFlags []limit.Limit

func (l *limitFlags) String() string { return fmt.Sprint(*l) }

func (l *limitFlags) Set(v string) error {
	p, a, ok := strings.Cut(v, "=")
	period, known := limit.ParsePeriod(strings.ToUpper(p))
	if !ok || !known {
		return fmt.Errorf("want PERIOD=AMOUNT with PERIOD one of MINUTE, HOUR, DAY, WEEK, MONTH, e.g. DAY=5000")
	}
	amount, err := money.ParseDecimal(a, money.Unsigned)
	if err != nil {
		return fmt.Errorf("the amount: %v", err)
	}
	*l = append(*l, limit.Limit{Period: period, Amount: amount})
	return nil
}

// ledgerCommand parses a ledger command's flags and words, checks them
// with check (when not nil) before it opens the database, and runs f; a
// check's refusal, or the ledger's of bad input, exits 2.
func ledgerCommand(ctx context.Context, env *environment, name, usage, about string, args []string,
	extra func(*flag.FlagSet), nargs func(int) bool, check func(words []string) error,
	f func(ctx context.Context, db *postgres.DB, words []string) error) error {
	fs := newFlagSet(env, name, usage, about)
	if extra != nil {
		extra(fs)
	}
	var (
		db config.Database
		lg config.Log
	)
	set := config.NewSet(fs, env.getenv, append(config.DatabaseSettings(&db), config.LogSettings(&lg)...)...)
	words, err := parseWords(set, args)
	if err != nil {
		return err
	}
	if !nargs(len(words)) {
		return usageError{fmt.Errorf("want 'paydispatch %s %s'", name, usage)}
	}
	if check != nil {
		if err := check(words); err != nil {
			var ue usageError
			if !errors.As(err, &ue) {
				err = usageError{err}
			}
			return err
		}
	}
	store, err := openCurrentDatabase(ctx, db, newLogger(env, lg))
	if err != nil {
		return err
	}
	defer store.Close()
	return usageOf(f(ctx, store, words))
}

// usageOf makes a ledger refusal of the caller's input a usage error.
func usageOf(err error) error {
	var le *ledger.Refusal
	if errors.As(err, &le) && (le.Code == ledger.CodeInvalidArgument || le.Code == ledger.CodeAccountConflict) {
		return usageError{err}
	}
	return err
}

func printJSON(env *environment, v any) error {
	enc := json.NewEncoder(env.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func runAccount(ctx context.Context, env *environment, args []string) error {
	const usage = "create --id ID --tenant T --currency C [--balance N] [--limit-based] [--fee N] [--limit PERIOD=AMOUNT...] | show ID"
	about := "create opens a ledger account (the same spec again changes nothing; another spec for an existing id exits 2);\n" +
		"show prints an account with its limits' utilization and its latest transactions, as JSON."
	sub, err := subcommand(ctx, env, "account", usage, about, args, "create", "show")
	if sub == "" {
		return err
	}
	if sub == "show" {
		var tenant string
		extra := func(fs *flag.FlagSet) {
			fs.StringVar(&tenant, "tenant", "", "the tenant whose account ID is (needed when several tenants use ID)")
		}
		return ledgerCommand(ctx, env, "account show", "ID [--tenant T]", about, args[1:], extra, func(n int) bool { return n == 1 }, nil,
			func(ctx context.Context, db *postgres.DB, w []string) error {
				v, err := service.New(db.Pool).Account(ctx, tenant, w[0])
				switch ledger.CodeOf(err) {
				case ledger.CodeAccountNotFound:
					return fmt.Errorf("no account %q", w[0])
				case ledger.CodeAccountAmbiguous:
					return usageError{fmt.Errorf("--tenant: several tenants have an account %q; name one", w[0])}
				}
				if err != nil {
					return err
				}
				return printJSON(env, httpapi.AccountJSON(v))
			})
	}
	var (
		spec       account.Spec
		balance    string
		fee        string
		limitBased bool
		limits     limitFlags
	)
	extra := func(fs *flag.FlagSet) {
		fs.StringVar(&spec.AccountID, "id", "", "the account id (1–64 letters, digits, '-', '_' or '.')")
		fs.StringVar(&spec.TenantID, "tenant", "", "the tenant owning it")
		fs.StringVar(&spec.Currency, "currency", "", "ISO 4217 code, e.g. EUR")
		fs.StringVar(&balance, "balance", "0", "opening balance, a decimal")
		fs.StringVar(&fee, "fee", "0", "flat fee per payment, in the account's currency")
		fs.BoolVar(&limitBased, "limit-based", false, "the account may go below zero; its control is its limits")
		fs.Var(&limits, "limit", "a period limit PERIOD=AMOUNT (MINUTE, HOUR, DAY, WEEK, MONTH); repeatable")
	}
	return ledgerCommand(ctx, env, "account create", "--id ID --tenant T --currency C [--balance N] [--limit-based] [--fee N] [--limit PERIOD=AMOUNT...]", about, args[1:], extra, func(n int) bool { return n == 0 },
		func([]string) error {
			var err error
			if spec.OpeningBalance, err = money.ParseDecimal(balance, money.Signed); err != nil {
				return usageError{fmt.Errorf("invalid --balance: %v", err)}
			}
			if spec.Fee, err = money.ParseDecimal(fee, money.Unsigned); err != nil {
				return usageError{fmt.Errorf("invalid --fee: %v", err)}
			}
			spec.LimitBased = limitBased
			return service.Validate(service.NewAccount{Spec: spec, Limits: limits})
		},
		func(ctx context.Context, db *postgres.DB, _ []string) error {
			v, created, err := service.New(db.Pool).CreateAccount(ctx, service.NewAccount{Spec: spec, Limits: limits})
			if err != nil {
				return err
			}
			if !created {
				fmt.Fprintln(env.stderr, "the account exists with this spec; nothing changed")
			}
			return printJSON(env, httpapi.AccountJSON(v))
		})
}

func runFXRate(ctx context.Context, env *environment, args []string) error {
	const usage = "set BASE QUOTE RATE [--dealable=false] | list"
	about := "set records 1 BASE = RATE QUOTE (e.g. set EUR USD 1.0850), used for quotes and contracts; --dealable=false\n" +
		"keeps it for quotes but refuses contracts at it (FX_UNAVAILABLE). list prints every rate."
	sub, err := subcommand(ctx, env, "fx-rate", usage, about, args, "set", "list")
	if sub == "" {
		return err
	}
	if sub == "list" {
		return ledgerCommand(ctx, env, "fx-rate list", "", about, args[1:], nil, func(n int) bool { return n == 0 }, nil,
			func(ctx context.Context, db *postgres.DB, _ []string) error {
				rates, err := fx.Rates(ctx, db.Pool)
				for _, r := range rates {
					fmt.Fprintf(env.stdout, "%s %s %s dealable=%t set_by=%s\n", r.Base, r.Quote, r.Rate, r.Dealable, r.SetBy)
				}
				return err
			})
	}
	dealable := true
	var rate decimal.Decimal
	extra := func(fs *flag.FlagSet) {
		fs.BoolVar(&dealable, "dealable", true, "false: quotes use the rate, contracts at it are refused")
	}
	return ledgerCommand(ctx, env, "fx-rate set", "BASE QUOTE RATE [--dealable=false]", about, args[1:], extra, func(n int) bool { return n == 3 },
		func(w []string) error {
			var err error
			if rate, err = money.ParseDecimal(w[2], money.Unsigned); err != nil {
				return usageError{fmt.Errorf("invalid RATE: %v", err)}
			}
			return fx.ValidateRate(strings.ToUpper(w[0]), strings.ToUpper(w[1]), rate)
		},
		func(ctx context.Context, db *postgres.DB, w []string) error {
			base, quote := strings.ToUpper(w[0]), strings.ToUpper(w[1])
			var r fx.Rate
			err := changeAudited(ctx, env, db, "fx-rate set", base+"/"+quote, func(tx pgx.Tx) (any, error) {
				var err error
				r, err = fx.Set(ctx, tx, fx.Rate{Base: base, Quote: quote, Rate: rate, Dealable: dealable, SetBy: "cli"})
				return map[string]any{"rate": r.Rate.String(), "dealable": r.Dealable}, err
			})
			if err == nil {
				fmt.Fprintf(env.stdout, "%s %s %s dealable=%t\n", r.Base, r.Quote, r.Rate, r.Dealable)
			}
			return err
		})
}

func runVerify(ctx context.Context, env *environment, args []string) error {
	about := "Checks the invariants of the money paydispatch moved on the database: the ledger's (balances follow\n" +
		"from their transactions, no account below zero unless limit-based, limit utilization equals its bookings),\n" +
		"the process manager's (every log replays to its process's status) and the payments' across them (one debit\n" +
		"per executed payment, none held by a failed or returned one, one rail instruction per booking, deliveries\n" +
		"dispatched once). Lists every violation and exits 1 when there is any."
	return ledgerCommand(ctx, env, "verify", "[flags]", about, args, nil, func(n int) bool { return n == 0 }, nil,
		func(ctx context.Context, db *postgres.DB, _ []string) error {
			vs, err := payment.Verify(ctx, db.Pool)
			if err != nil {
				return err
			}
			for _, v := range vs {
				fmt.Fprintf(env.stdout, "%s\t%s\t%s\n", v.Rule, v.Row, v.Detail)
			}
			if len(vs) > 0 {
				return fmt.Errorf("%d violation(s)", len(vs))
			}
			fmt.Fprintln(env.stdout, "verify: every invariant holds")
			return nil
		})
}

// subcommand is args[0] when it is one of names. Otherwise it is "", with
// what the command returns: its usage for help, or a usage error naming
// the subcommands for none or another word.
func subcommand(ctx context.Context, env *environment, name, usage, about string, args []string, names ...string) (string, error) {
	want := strings.Join(names, " or ")
	switch {
	case len(args) == 0:
		return "", usageError{fmt.Errorf("want a subcommand: %s", want)}
	case isHelp(args[0]):
		return "", ledgerCommand(ctx, env, name, usage, about, args, nil, func(int) bool { return true }, nil, nil)
	case !slices.Contains(names, args[0]):
		return "", usageError{fmt.Errorf("unknown subcommand %q: want %s", plaintext.Clip(args[0], 64), want)}
	}
	return args[0], nil
}

func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// maxCLIUser bounds the OS user an audit entry names.
const maxCLIUser = 128

// cliActor names, in the audit log, who changes something from the
// command line: cli:<OS user>. A user name that could not be recorded as
// it is is refused before anything is done.
func cliActor(env *environment) (string, error) {
	u := env.getenv("USER")
	if u == "" {
		return "cli", nil
	}
	if len(u) > maxCLIUser || !plaintext.Valid(u) {
		return "", usageError{fmt.Errorf("USER names who makes the change in the audit log: at most %d bytes of UTF-8 text without control characters", maxCLIUser)}
	}
	return "cli:" + u, nil
}

// changeAudited makes an admin change from the command line and records
// it in the audit log, in one transaction: change makes it in tx and
// returns the entry's detail. If the entry cannot be written the change
// is rolled back and the command fails; the caller prints what it did
// only after.
func changeAudited(ctx context.Context, env *environment, db *postgres.DB, action, target string, change func(tx pgx.Tx) (detail any, err error)) error {
	actor, err := cliActor(env)
	if err != nil {
		return err
	}
	return audit.Change(ctx, db.Pool, actor, action, target, change)
}

// cliRecord is the audit entry of a change that commits in several
// transactions (a cancel, a requeue), written inside each of them.
func cliRecord(ctx context.Context, tx pgx.Tx, actor, action, target string, detail any) error {
	_, err := audit.Record(ctx, tx, actor, action, target, detail)
	return err
}
