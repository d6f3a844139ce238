package config

import "time"

// Retention is how long each table's history is kept before the
// retention cleaner deletes it; 0 keeps it all.
type Retention struct {
	QueueCompleted       time.Duration // exec_queue's COMPLETED items, by completed_at
	DispatchAudit        time.Duration // dispatch_audit_log, by created_at
	ProcessEnded         time.Duration // processes ended SUCCEEDED or COMPENSATED, with their log and inbox
	OutboxDone           time.Duration // done outbox instructions' keys and attempts, by enqueue time
	Pacing               time.Duration // pacing windows over, and their slots, by window start
	WebhookDelivered     time.Duration // delivered webhook deliveries, by settled_at
	PaymentNotifications time.Duration // settled payments' notification records, by created_at
	FileFingerprints     time.Duration // bulk files' fingerprints, after their duplicate window closed
	// Interval is the time between the cleaner's rounds: the day's minute
	// by default, seconds for a benchmark whose retention is minutes.
	Interval time.Duration
}

// RetentionSettings binds r's settings.
func RetentionSettings(r *Retention) []*Setting {
	return []*Setting{
		retentionVar("retention-queue-completed", "PAYDISPATCH_RETENTION_QUEUE_COMPLETED", "24h",
			"how long a COMPLETED dispatch-queue item is kept after it completed (other states are never deleted); 0 keeps them all", &r.QueueCompleted),
		retentionVar("retention-dispatch-audit", "PAYDISPATCH_RETENTION_DISPATCH_AUDIT", "168h",
			"how long a row of the dispatch queue's audit log is kept; 0 keeps them all", &r.DispatchAudit),
		retentionVar("retention-process-ended", "PAYDISPATCH_RETENTION_PROCESS_ENDED", "720h",
			"how long a process that ended SUCCEEDED or COMPENSATED is kept, with its log and inbox (open, paused, FAILED and COMPENSATION_FAILED processes are never deleted); 0 keeps them all", &r.ProcessEnded),
		retentionVar("retention-outbox-done", "PAYDISPATCH_RETENTION_OUTBOX_DONE", "720h",
			"how long a done rail or event instruction's key and attempts are kept after it was enqueued (pending, in-flight and dead-lettered ones are never deleted); 0 keeps them all", &r.OutboxDone),
		retentionVar("retention-pacing", "PAYDISPATCH_RETENTION_PACING", "24h",
			"how long a pacing window and its slots are kept after the window began (a window not yet over is never deleted); 0 keeps them all", &r.Pacing),
		retentionVar("retention-webhook-delivered", "PAYDISPATCH_RETENTION_WEBHOOK_DELIVERED", "168h",
			"how long a delivered webhook's row is kept after it was delivered (pending deliveries and dead letters are never deleted); 0 keeps them all", &r.WebhookDelivered),
		retentionVar("retention-payment-notifications", "PAYDISPATCH_RETENTION_PAYMENT_NOTIFICATIONS", "720h",
			"how long a record that a payment's parties were notified is kept (only once the payment is settled); 0 keeps them all", &r.PaymentNotifications),
		retentionVar("retention-file-fingerprints", "PAYDISPATCH_RETENTION_FILE_FINGERPRINTS", "24h",
			"how long a bulk file's fingerprint is kept after its duplicate window (PAYDISPATCH_DUPLICATE_FILE_DAYS) closed; 0 keeps them all", &r.FileFingerprints),
		DurationVar("retention-interval", "PAYDISPATCH_RETENTION_INTERVAL", "1m", time.Second, 24*time.Hour,
			"the time between the retention cleaner's rounds", &r.Interval),
	}
}

// retentionVar binds a retention: 0 keeps every row, any other value is
// a duration from a minute (a steady-state benchmark keeps minutes) to
// ten years.
func retentionVar(flag, env, def, usage string, dst *time.Duration) *Setting {
	return &Setting{Flag: flag, Env: env, Default: def, Usage: usage,
		Parse: func(v string) error {
			if v == "0" {
				*dst = 0
				return nil
			}
			d, err := durationIn(v, time.Minute, 10*365*24*time.Hour)
			*dst = d
			return err
		}}
}

// DefaultRetention is the retention serve runs with when nothing is set.
func DefaultRetention() Retention {
	var r Retention
	for _, s := range RetentionSettings(&r) {
		if err := s.Parse(s.Default); err != nil {
			panic("config: a retention default does not parse: " + err.Error())
		}
	}
	return r
}
