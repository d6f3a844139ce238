package dbsqlc

// Statement texts, for EXPLAIN in tests.
const (
	RatePairSQL                  = ratePair
	GetContractByReferenceSQL    = getContractByReference
	UnwindContractByReferenceSQL = unwindContractByReference
	UnwindContractSQL            = unwindContract
)
