package dbsqlc

// Statement texts, for EXPLAIN in tests.
const (
	LookupAccountsSQL     = lookupAccounts
	RecentTransactionsSQL = recentTransactions
	GetAccountSQL         = getAccount
)
