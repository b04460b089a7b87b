package tools_test

import (
	"fmt"

	"github.com/gorunner/gorunner/tools"
)

func ExampleClosest() {
	visible := []string{"greet", "process-order", "gorunner_get_run", "gorunner_list_runs"}
	fmt.Println(tools.Closest("gret", visible))
	fmt.Println(tools.Closest("proces_order", visible))
	fmt.Println(tools.Closest("translate", visible))
	// Output:
	// [greet]
	// [process-order]
	// []
}
