package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/postgres"
)

// runToken manages API tokens: create (the token printed once, alone on
// stdout), list, revoke.
func runToken(ctx context.Context, env *environment, args []string) error {
	const usage = "create --scopes S1,S2 [--tenant T] [--expires-in D] [--name N] | list | revoke TOKEN_ID"
	about := "create makes an API token and prints it once, alone on standard output (the database keeps only its hash);\n" +
		"scopes: payments:write, payments:read, payments:approve, accounts:write, webhooks:write, admin (admin implies the\n" +
		"others and is never bound to a tenant); --tenant binds it to one tenant's payments and accounts. list prints every token without its secret;\n" +
		"revoke stops one at once. Example: paydispatch token create --scopes payments:write,payments:read --tenant acme"
	if len(args) == 0 {
		return usageError{errors.New("want a subcommand: create, list or revoke")}
	}
	switch args[0] {
	case "list":
		return ledgerCommand(ctx, env, "token list", "", about, args[1:], nil, func(n int) bool { return n == 0 }, nil,
			func(ctx context.Context, db *postgres.DB, _ []string) error {
				tokens, err := auth.NewStore(db.Pool).List(ctx)
				now := time.Now()
				for _, t := range tokens {
					scopes := make([]string, len(t.Scopes))
					for i, s := range t.Scopes {
						scopes[i] = string(s)
					}
					tenant, expires := t.TenantID, "never"
					if tenant == "" {
						tenant = "*"
					}
					if t.ExpiresAt != nil {
						expires = t.ExpiresAt.UTC().Format(time.RFC3339)
					}
					fmt.Fprintf(env.stdout, "%s %s scopes=%s tenant=%s expires=%s created=%s name=%q\n", t.ID, t.Status(now),
						strings.Join(scopes, ","), tenant, expires, t.CreatedAt.UTC().Format(time.RFC3339), t.Name)
				}
				return err
			})
	case "revoke":
		return ledgerCommand(ctx, env, "token revoke", "TOKEN_ID", about, args[1:], nil, func(n int) bool { return n == 1 }, nil,
			func(ctx context.Context, db *postgres.DB, w []string) error {
				err := changeAudited(ctx, env, db, "token revoke", w[0], func(tx pgx.Tx) (any, error) {
					return nil, auth.NewStore(tx).Revoke(ctx, w[0])
				})
				if errors.Is(err, auth.ErrNotFound) {
					return usageError{fmt.Errorf("no token %q ('paydispatch token list' shows their ids)", plaintext.Clip(w[0], 64))}
				}
				return err
			})
	case "create":
	default:
		if isHelp(args[0]) {
			return ledgerCommand(ctx, env, "token", usage, about, args, nil, func(int) bool { return true }, nil, nil)
		}
		return usageError{fmt.Errorf("unknown subcommand %q: want create, list or revoke", plaintext.Clip(args[0], 64))}
	}
	var (
		n         auth.NewToken
		scopes    string
		expiresIn string
	)
	extra := func(fs *flag.FlagSet) {
		fs.StringVar(&scopes, "scopes", "", "comma-separated: payments:write, payments:read, payments:approve, accounts:write, webhooks:write, admin")
		fs.StringVar(&n.TenantID, "tenant", "", "bind the token to this tenant's payments and accounts")
		fs.StringVar(&expiresIn, "expires-in", "", "the token stops working this long after now, e.g. 720h; empty: never")
		fs.StringVar(&n.Name, "name", "", "what the token is for, shown by token list")
	}
	return ledgerCommand(ctx, env, "token create", "--scopes S1,S2 [--tenant T] [--expires-in D] [--name N]", about, args[1:], extra,
		func(n int) bool { return n == 0 },
		func([]string) error {
			var err error
			if n.Scopes, err = auth.ParseScopes(scopes); err != nil {
				return usageError{fmt.Errorf("invalid --scopes: %w", err)}
			}
			if expiresIn != "" {
				if n.ExpiresIn, err = time.ParseDuration(expiresIn); err != nil || n.ExpiresIn <= 0 {
					return usageError{fmt.Errorf("invalid --expires-in %q: want a positive duration such as 720h", plaintext.Clip(expiresIn, 64))}
				}
			}
			if err := n.Validate(); err != nil {
				return usageError{err}
			}
			return nil
		},
		func(ctx context.Context, db *postgres.DB, _ []string) error {
			actor, err := cliActor(env)
			if err != nil {
				return err
			}
			var secret string
			var t auth.Token
			if err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
				var err error
				if secret, t, err = auth.NewStore(tx).Create(ctx, n); err != nil {
					return err
				}
				return cliRecord(ctx, tx, actor, "token create", t.ID, t) // the stored token, never its secret
			}); err != nil {
				return err
			}
			fmt.Fprintln(env.stderr, "created", t.ID, "(the token below is shown once)")
			fmt.Fprintln(env.stdout, secret)
			return nil
		})
}
