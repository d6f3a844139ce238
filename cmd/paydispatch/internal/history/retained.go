package history

import (
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
)

// Retained is Options.Retention for the cleaner run with r: each table it
// bounds, with its setting (0 keeps all), and pacing_execution with the
// hour pacing keeps it itself.
func Retained(r config.Retention) map[string]time.Duration {
	return map[string]time.Duration{
		"exec_queue":              r.QueueCompleted,
		"dispatch_audit_log":      r.DispatchAudit,
		"process_instance":        r.ProcessEnded,
		"process_log":             r.ProcessEnded,
		"process_inbox":           r.ProcessEnded,
		"process_attention":       r.ProcessEnded,
		"payment_outbox_keys":     r.OutboxDone,
		"payment_outbox_attempts": r.OutboxDone,
		"pacing_slot":             r.Pacing,
		"pacing_window":           r.Pacing,
		"pacing_execution":        time.Hour,
		"payment_notifications":   r.PaymentNotifications,
	}
}
