package dbsqlc

// Statement texts, for EXPLAIN in tests.
const (
	EnsureWindowsSQL       = ensureWindows
	LockWindowsSQL         = lockWindows
	BookingsByReferenceSQL = bookingsByReference
	BookWindowsSQL         = bookWindows
	LockBookedWindowsSQL   = lockBookedWindows
	ReverseBookingsSQL     = reverseBookings
	CurrentUsageSQL        = currentUsage
)
