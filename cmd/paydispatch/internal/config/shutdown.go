package config

import "time"

// ShutdownSetting binds the time a role has to stop on SIGINT or SIGTERM:
// serve drains its requests and stops every part within it, and each
// role run apart stops its parts within it; a part still stopping then is
// left behind and the process exits.
func ShutdownSetting(d *time.Duration) *Setting {
	return DurationVar("shutdown-timeout", "PAYDISPATCH_SHUTDOWN_TIMEOUT", "30s", time.Second, time.Hour,
		"how long the process has to stop on SIGINT/SIGTERM (serve: to drain HTTP, then stop every role); what is still stopping then is left behind", d)
}
