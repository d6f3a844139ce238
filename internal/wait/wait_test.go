package wait_test

import (
	"context"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/internal/wait"
)

// For returns true when the time has passed, false as soon as the context
// is done.
func ExampleFor() {
	fmt.Println(wait.For(context.Background(), time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fmt.Println(wait.For(ctx, time.Hour))
	// Output:
	// true
	// false
}
