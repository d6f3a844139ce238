package process_test

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/process"
)

// opening is an account opening's data, stored as JSON and decoded once
// for each step.
type opening struct {
	Deposit string   `json:"deposit"` // money: a decimal string
	Done    []string `json:"done,omitempty"`
}

// accountOpening is a process of another domain than payments: create the
// customer, open the account with its first deposit, issue the card. A
// refused card undoes the account, then the customer.
func accountOpening() process.Definition[opening] {
	step := func(name, sql string, fail string) process.Handler[opening] {
		return func(ctx context.Context, tx pgx.Tx, in process.StepInput, o *opening) error {
			if fail != "" && in.BusinessKey == fail {
				fmt.Printf("%s: %s refused\n", in.BusinessKey, name)
				return process.Failf("CARD_REFUSED", "the card issuer said no")
			}
			fmt.Printf("%s: %s\n", in.BusinessKey, name)
			if _, err := tx.Exec(ctx, sql, in.BusinessKey, o.Deposit); err != nil {
				return err // an infrastructure failure: Temporal retries
			}
			o.Done = append(o.Done, name) // stored with the step
			return nil
		}
	}
	return process.Definition[opening]{
		Type:    "AccountOpening",
		Initial: "CreateCustomer",
		Next: func(s string, _ opening) (string, error) {
			return map[string]string{"CreateCustomer": "OpenAccount", "OpenAccount": "IssueCard"}[s], nil
		},
		Steps: map[string]process.Step[opening]{
			"CreateCustomer": {Handler: step("CreateCustomer", `INSERT INTO customer VALUES ($1, $2::numeric)`, ""), Compensation: "DeleteCustomer"},
			"OpenAccount":    {Handler: step("OpenAccount", `INSERT INTO bank_account VALUES ($1, $2::numeric)`, ""), Compensation: "CloseAccount"},
			"IssueCard":      {Handler: step("IssueCard", `UPDATE bank_account SET card = true WHERE owner = $1 AND balance >= $2::numeric`, "mallory"), Retryable: []string{"ISSUER_BUSY"}, MaxRetries: 3},
			"CloseAccount":   {Handler: step("CloseAccount", `DELETE FROM bank_account WHERE owner = $1 AND balance = $2::numeric`, "")},
			"DeleteCustomer": {Handler: step("DeleteCustomer", `DELETE FROM customer WHERE name = $1 AND first_deposit = $2::numeric`, "")},
		},
	}
}

// openAccount is the domain's workflow: it runs the process inline, its
// steps as local activities on this workflow's worker.
func openAccount(ctx workflow.Context, customer string) (process.Outcome, error) {
	return process.Run(ctx, process.Options{
		Type: "AccountOpening", BusinessKey: customer,
		Data: opening{Deposit: "250.00"},
		Exec: process.ExecOptions{Local: true},
	})
}

// Two account openings on Temporal (the in-process server) and PostgreSQL
// (a test database): alice's succeeds; mallory's card is refused, so her
// account and customer record are undone, last first.
func Example() {
	pool, c, cleanup, err := exampleEnv()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	ctx := context.Background()

	reg, err := process.NewRegistry(accountOpening())
	if err != nil {
		fmt.Println(err)
		return
	}
	w := worker.New(c, "account-opening", worker.Options{})
	process.Register(w, process.NewActivities(process.ActivitiesConfig{DB: pool, Registry: reg}))
	w.RegisterWorkflow(openAccount)
	if err := w.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer w.Stop()

	for _, customer := range []string{"alice", "mallory"} {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "open-" + customer, TaskQueue: "account-opening"}, openAccount, customer)
		if err != nil {
			fmt.Println(err)
			return
		}
		var out process.Outcome
		if err := run.Get(ctx, &out); err != nil {
			fmt.Println(err)
			return
		}
		if out.ErrorCode != "" {
			fmt.Println(customer, out.Status, out.ErrorCode)
		} else {
			fmt.Println(customer, out.Status)
		}
	}
	var accounts int
	var total string
	if err := pool.QueryRow(ctx, `SELECT count(*), sum(balance)::text FROM bank_account`).Scan(&accounts, &total); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("accounts:", accounts, "holding", total)

	// Output:
	// alice: CreateCustomer
	// alice: OpenAccount
	// alice: IssueCard
	// alice SUCCEEDED
	// mallory: CreateCustomer
	// mallory: OpenAccount
	// mallory: IssueCard refused
	// mallory: CloseAccount
	// mallory: DeleteCustomer
	// mallory COMPENSATED CARD_REFUSED
	// accounts: 1 holding 250.00
}

// exampleEnv gives the example a test database with its two tables, and
// the package's in-process Temporal server. Its cleanup prints what
// Verify finds, so a log that does not replay to the stored state fails
// the example.
func exampleEnv() (*pgxpool.Pool, client.Client, func(), error) {
	c, err := sharedTemporal()
	if err != nil {
		return nil, nil, nil, err
	}
	pool, drop, err := pgtest.Open()
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := pool.Exec(context.Background(), `
		CREATE TABLE customer (name text PRIMARY KEY, first_deposit numeric(19,2) NOT NULL);
		CREATE TABLE bank_account (owner text PRIMARY KEY, balance numeric(19,2) NOT NULL, card bool NOT NULL DEFAULT false)`); err != nil {
		drop()
		return nil, nil, nil, err
	}
	return pool, c, func() {
		ms, err := process.Verify(context.Background(), pool)
		if err != nil {
			fmt.Println("verify:", err)
		}
		for _, m := range ms {
			fmt.Println(m)
		}
		drop()
	}, nil
}
