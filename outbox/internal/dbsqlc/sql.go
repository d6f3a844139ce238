package dbsqlc

// The hot statements' text, for EXPLAIN.
const (
	EnqueueSQL     = enqueue
	LookupKeySQL   = lookupKey
	ClaimDueSQL    = claimDue
	ClaimStrictSQL = claimStrict
	RecordSQL      = recordOutcomes
	ReapZombiesSQL = reapZombies
	NextDueSQL     = nextDue
)
