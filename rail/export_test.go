package rail

// Fixtures for the external tests (package rail_test).
var (
	GoodInstruction = goodInstruction
	MessageFor      = messageFor
)
