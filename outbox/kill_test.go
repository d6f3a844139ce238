package outbox_test

const childEnv = "OUTBOX_KILLTEST_CHILD"

func runChild() int { return 2 }
