package expression_test

import (
	"fmt"

	"github.com/gorunner/gorunner/expression"
)

func ExampleCompile() {
	tpl, err := expression.Compile(map[string]any{
		"token": "order:${{ input.orderId }}",
		"count": "${{ input.count + 1 }}",
		"ok":    "${{ steps.confirm.output.confirmed }}",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := tpl.Eval(expression.Env{
		"input": map[string]any{"orderId": "1001", "count": 2.0},
		"steps": map[string]any{},
	})
	fmt.Println(out, err, tpl.Refs())
	// Output: map[count:3 ok:<nil> token:order:1001] <nil> [confirm]
}
