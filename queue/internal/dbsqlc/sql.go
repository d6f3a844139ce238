package dbsqlc

// ClaimBatchSQL is the claim statement's text, for EXPLAIN.
const ClaimBatchSQL = claimBatch

// FindStaleClaimsSQL is the stale-claim query's text, for EXPLAIN.
const FindStaleClaimsSQL = findStaleClaims

// MarkDispatchedSQL is the dispatch transition's text, for EXPLAIN.
const MarkDispatchedSQL = markDispatched

// ClaimBatchFairSQL is the fair claim's text, for EXPLAIN.
const ClaimBatchFairSQL = claimBatchFair

// DeadLetterExhaustedSQL is the exhausted-retries sweep's text, for EXPLAIN.
const DeadLetterExhaustedSQL = deadLetterExhausted
