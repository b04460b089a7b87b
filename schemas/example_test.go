package schemas_test

import (
	"fmt"

	"github.com/gorunner/gorunner/schemas"
)

func ExampleValidate() {
	doc := []byte(`
name: greet
input:
  type: object
  properties: { who: { type: string } }
steps:
  - id: hello
    set: "Hello, ${{ input.who }}!"
  - id: shout
    if: "${{ steps.later.output }}"
    http: { method: SEND }
`)
	d, err := schemas.Decode(doc)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range schemas.Validate(d, schemas.ValidateOptions{}) {
		fmt.Printf("%s: %s\n", p.Path, p.Message)
	}
	// Output:
	// /steps/1/if: expression reads steps.later, but there is no step "later"
	// /steps/1/http/method: method "SEND" must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS
	// /steps/1/http/url: url is required
}

func ExampleInputSchema_Validate() {
	s, err := schemas.CompileInput([]byte(`{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Validate(map[string]any{}))
	// Output: [{/orderId "orderId" is required}]
}
