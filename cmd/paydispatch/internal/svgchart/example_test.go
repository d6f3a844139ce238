package svgchart_test

import (
	"fmt"
	"strings"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/svgchart"
)

// Executions per second against a limit of 25 with its ±5 % band: one
// column per second, the limit as a line.
func ExampleColumns() {
	svg := svgchart.Columns("executions per second", "seconds after the instant", []float64{24, 25, 26, 25}, 25, 0.05)
	fmt.Println(strings.HasPrefix(svg, "<svg"), strings.Count(svg, "<rect"), strings.Contains(svg, "limit 25"))
	// Output: true 5 true
}

func ExampleHBars() {
	svg := svgchart.HBars("per tenant", []string{"acme", "bravo"}, []float64{600, 400})
	fmt.Println(strings.Count(svg, "<rect"), strings.Contains(svg, ">acme<"), strings.Contains(svg, ">600<"))
	// Output: 2 true true
}
