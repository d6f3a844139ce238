package config

import "time"

// Retention is how long each table's history is kept before the
// retention cleaner deletes it; 0 keeps it all.
type Retention struct {
	QueueCompleted time.Duration // exec_queue's COMPLETED items, by completed_at
	DispatchAudit  time.Duration // dispatch_audit_log, by created_at
}

// RetentionSettings binds r's settings.
func RetentionSettings(r *Retention) []*Setting {
	return []*Setting{
		retentionVar("retention-queue-completed", "PAYDISPATCH_RETENTION_QUEUE_COMPLETED", "24h",
			"how long a COMPLETED dispatch-queue item is kept after it completed (other states are never deleted); 0 keeps them all", &r.QueueCompleted),
		retentionVar("retention-dispatch-audit", "PAYDISPATCH_RETENTION_DISPATCH_AUDIT", "168h",
			"how long a row of the dispatch queue's audit log is kept; 0 keeps them all", &r.DispatchAudit),
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
