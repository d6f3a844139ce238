package dbsqlc

// Statement texts, for the EXPLAIN checks of the hot queries.
const (
	LockInstanceSQL   = lockInstance
	UpdateInstanceSQL = updateInstance
	ListByStatusSQL   = listByStatus
	ListLogSQL        = listLog
	CompletedStepsSQL = completedSteps
	GetInboxSQL       = getInbox
)
