package main

import (
	"log/slog"

	"go.temporal.io/sdk/worker"

	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/temporal"
)

// paymentWorkerOptions are the seed's payment worker limits.
var paymentWorkerOptions = worker.Options{MaxConcurrentWorkflowTaskExecutionSize: 100, MaxConcurrentActivityExecutionSize: 200}

// startInitWorker runs Phase A (PaymentInitWorkflow) on its task queue.
func startInitWorker(store *postgres.DB, tc *temporal.Conn, log *slog.Logger) (func(), error) {
	w := worker.New(tc.Client, payment.InitTaskQueue, paymentWorkerOptions)
	payment.RegisterInit(w, &payment.InitActivities{Store: payment.NewStore(store.Pool), Queue: queue.New(store.Pool)})
	if err := w.Start(); err != nil {
		return nil, err
	}
	log.Info("payment init worker started", "task_queue", payment.InitTaskQueue)
	return w.Stop, nil
}

// startExecWorker runs Phase B's business logic (PaymentExecWorkflow).
func startExecWorker(store *postgres.DB, tc *temporal.Conn, log *slog.Logger) (func(), error) {
	w := worker.New(tc.Client, payment.ExecTaskQueue, paymentWorkerOptions)
	payment.RegisterExec(w, &payment.ExecActivities{Store: payment.NewStore(store.Pool)})
	if err := w.Start(); err != nil {
		return nil, err
	}
	log.Info("payment exec worker started", "task_queue", payment.ExecTaskQueue)
	return w.Stop, nil
}

// paymentService is the intake the HTTP API calls.
func paymentService(store *postgres.DB, tc *temporal.Conn, chunkSize int) *payment.Service {
	return &payment.Service{Store: payment.NewStore(store.Pool), Queue: queue.New(store.Pool), Temporal: tc.Client, ChunkSize: chunkSize}
}
