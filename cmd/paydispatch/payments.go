package main

import (
	"log/slog"

	"go.temporal.io/sdk/worker"

	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/temporal"
)

// startPaymentWorkers runs Phase A and Phase B workers with the seed's
// concurrency (100 workflow tasks, 200 activities each) and returns the
// intake service and a func that stops them.
func startPaymentWorkers(store *postgres.DB, tc *temporal.Conn, log *slog.Logger) (*payment.Service, func(), error) {
	ps := payment.NewStore(store.Pool)
	q := queue.New(store.Pool)
	opts := worker.Options{MaxConcurrentWorkflowTaskExecutionSize: 100, MaxConcurrentActivityExecutionSize: 200}
	initW := worker.New(tc.Client, payment.InitTaskQueue, opts)
	payment.RegisterInit(initW, &payment.InitActivities{Store: ps, Queue: q})
	execW := worker.New(tc.Client, payment.ExecTaskQueue, opts)
	payment.RegisterExec(execW, &payment.ExecActivities{Store: ps})
	if err := initW.Start(); err != nil {
		return nil, nil, err
	}
	if err := execW.Start(); err != nil {
		initW.Stop()
		return nil, nil, err
	}
	log.Info("payment workers started", "init_queue", payment.InitTaskQueue, "exec_queue", payment.ExecTaskQueue)
	stop := func() { initW.Stop(); execW.Stop() }
	return &payment.Service{Store: ps, Queue: q, Temporal: tc.Client}, stop, nil
}
