package schemas

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

// fanOutSchema is levels of "allOf": [{"$ref": next}, {"$ref": next}]: 2^levels schemas
// applied to the input in about 65 bytes a level. Before MaxSchemaApplications, 20 levels
// took seconds of CPU to validate {} and 30 hours.
func fanOutSchema(levels int) string {
	var defs []string
	for i := range levels {
		defs = append(defs, fmt.Sprintf(`"l%d":{"allOf":[{"$ref":"#/$defs/l%d"},{"$ref":"#/$defs/l%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"l%d":{"type":"object"}`, levels))
	return `{"type":"object","$defs":{` + strings.Join(defs, ",") + `},"$ref":"#/$defs/l0"}`
}

// nestedFanOutSchema applies two schemas to its input, each of which applies two to the
// input's property a, and so on levels deep, with no recursion: 2^levels schemas applied to
// the value levels deep.
func nestedFanOutSchema(levels int) string {
	var defs []string
	for i := range levels {
		defs = append(defs, fmt.Sprintf(`"l%d":{"type":"object","properties":{"a":{"allOf":[{"$ref":"#/$defs/l%d"},{"$ref":"#/$defs/l%d"}]}}}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"l%d":{"type":"object"}`, levels))
	return `{"type":"object","$defs":{` + strings.Join(defs, ",") + `},"allOf":[{"$ref":"#/$defs/l0"},{"$ref":"#/$defs/l0"}]}`
}

// reusedDefsSchema is levels of an object of ten properties, each the next level's
// definition: 10^levels properties in all, but each value gets one schema.
func reusedDefsSchema(levels int) string {
	var defs []string
	for i := range levels {
		var props []string
		for p := range 10 {
			props = append(props, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/l%d"}`, p, i+1))
		}
		defs = append(defs, fmt.Sprintf(`"l%d":{"type":"object","properties":{%s}}`, i, strings.Join(props, ",")))
	}
	defs = append(defs, fmt.Sprintf(`"l%d":{"type":"string"}`, levels))
	return `{"type":"object","$defs":{` + strings.Join(defs, ",") + `},"$ref":"#/$defs/l0"}`
}

// hubSchema has n definitions, each a property of the root, that refer back to themselves
// and to the root: n recursions, each of whose paths back runs through all n. With a
// MaxSchemaPaths budget each, 1,000 of them (100 KB) took over a second to compile.
func hubSchema(n int) string {
	var props, defs []string
	for i := range n {
		props = append(props, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/d%d"}`, i, i))
		defs = append(defs, fmt.Sprintf(`"d%d":{"properties":{"a":{"$ref":"#/$defs/d%d"},"b":{"$ref":"#"}}}`, i, i))
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"$defs":{` + strings.Join(defs, ",") + `}}`
}

// chainedRecursionsSchema is levels definitions, each applying itself and the next to its
// property a: one recursion each, but at a value n levels deep the first applies to it once,
// the second n times, the third about n²/2 times… 2^n in all. The old check, which looked
// at each recursion alone, let 22 levels (2 KB) through, and an input 22 levels deep took
// 26 s of CPU to validate.
func chainedRecursionsSchema(levels int) string {
	var defs []string
	for i := range levels {
		defs = append(defs, fmt.Sprintf(`"x%d":{"type":"object","properties":{"a":{"allOf":[{"$ref":"#/$defs/x%d"},{"$ref":"#/$defs/x%d"}]}}}`, i, i, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"x%d":{"type":"object"}`, levels))
	return `{"$defs":{` + strings.Join(defs, ",") + `},"$ref":"#/$defs/x0"}`
}

// allOfSchema applies n schemas to its input besides itself.
func allOfSchema(n int) string {
	return `{"allOf":[` + strings.Repeat(`{"type":"object"},`, n-1) + `{"type":"object"}]}`
}

// conditionalSchema applies if, then then or else, each of which applies n schemas
// besides itself: n+3 applications in all.
func conditionalSchema(n int) string {
	return `{"if":{"required":["a"]},"then":` + allOfSchema(n) + `,"else":` + allOfSchema(n) + `}`
}

// recursiveDAGSchema is n definitions, each with two properties of the one before and a
// property of itself: no value gets a schema twice, but the paths from each back to
// itself are 2^n, more than the old check followed.
func recursiveDAGSchema(n int) string {
	defs := []string{`"d0":{"type":"string"}`}
	for i := 1; i <= n; i++ {
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{"a":{"$ref":"#/$defs/d%d"},`+
			`"b":{"$ref":"#/$defs/d%d"},"self":{"$ref":"#/$defs/d%d"}}}`, i, i-1, i-1, i))
	}
	return fmt.Sprintf(`{"$defs":{%s},"$ref":"#/$defs/d%d"}`, strings.Join(defs, ","), n)
}

// doublingSchema applies t twice to each value it nests into: 200 bytes, and before the
// cycle check an input {"a":{"a":…}} 20 levels deep took 7 s of CPU to validate, each
// level more doubling it.
const doublingSchema = `{"$defs":{"t":{"type":"object","allOf":[{"$ref":"#/$defs/u"},{"$ref":"#/$defs/u"}]},` +
	`"u":{"properties":{"a":{"$ref":"#/$defs/t"}}}},"$ref":"#/$defs/t"}`

// dynamicDoublingSchema applies a twice, whose property a has a $dynamicRef to its own
// $dynamicAnchor n: the validator resolves it to the outermost schema of the dynamic scope
// with that anchor, the root, which applies a twice again. The old check followed the
// $dynamicRef to a alone and let it through; an input 22 levels deep took 58 s of CPU.
const dynamicDoublingSchema = `{"$dynamicAnchor":"n","$defs":{"a":{"$id":"a","$dynamicAnchor":"n","type":"object",` +
	`"properties":{"a":{"$dynamicRef":"#n"}}}},"allOf":[{"$ref":"a"},{"$ref":"a"}]}`

// strictTreeSchema is the JSON Schema specification's example of $dynamicRef, its two
// resources in one document: a tree whose children are of the schema that extends it.
const strictTreeSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"strict-tree",` +
	`"$dynamicAnchor":"node","$ref":"tree","unevaluatedProperties":false,` +
	`"$defs":{"tree":{"$id":"tree","$dynamicAnchor":"node","type":"object","properties":{"data":true,` +
	`"children":{"type":"array","items":{"$dynamicRef":"#node"}}}}}}`

// busyCheckSchema is n properties of the root, each a definition whose then refers to the
// root and else to a copy of its properties: validation is linear, but the check works out
// what n times 2n properties get. With 2,000 (290 KB) it took 24 s of CPU before maxCostWork.
func busyCheckSchema(n int) string {
	var props, defs []string
	for i := range n {
		props = append(props, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/n%d"}`, i, i))
		defs = append(defs, fmt.Sprintf(`"n%d":{"if":{"required":["x"]},"then":{"$ref":"#"},"else":{"$ref":"#/$defs/h"}}`, i))
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"$defs":{"h":{"properties":{` +
		strings.Join(props, ",") + `}},` + strings.Join(defs, ",") + `}}`
}

// objectsSchema is a schema of n empty property schemas: n+2 JSON objects (with the root
// and its properties map).
func objectsSchema(n int) string {
	props := make([]string, n)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":{}`, i)
	}
	return `{"properties":{` + strings.Join(props, ",") + `}}`
}

// manyRefsSchema is n references to one schema that applies in place 998 others: each
// reference's closure holds them all. Before closures counted in maxCostWork, 75,000 of
// them (1 MiB, the body limit) took minutes of CPU and 19 GB of allocations to check.
func manyRefsSchema(n int) string {
	return `{"$defs":{"h":{"$anchor":"h","allOf":[` + strings.Repeat(`{},`, 997) + `{}]}},` +
		`"prefixItems":[` + strings.Repeat(`{"$ref":"#h"},`, n-1) + `{"$ref":"#h"}]}`
}

// TestSecuritySchemaCost publishes, for real through Validate and CompileInput (the input
// schema of a tool call, an ask's schema, an output schema), JSON Schemas whose validation
// takes exponential time: each is refused at once, with the problem at /input.
func TestSecuritySchemaCost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, msg string
	}{
		{"allOf fan-out", fanOutSchema(30), "more than 1000 subschemas to one value"},
		{"anyOf fan-out", strings.ReplaceAll(fanOutSchema(30), "allOf", "anyOf"), "more than 1000 subschemas to one value"},
		{"fan-out doubling at each property level", nestedFanOutSchema(20), "more than 1000 subschemas to one value"},
		{"recursion doubling per level", doublingSchema, "in two ways that apply to one value"},
		{"recursion through a property and a pattern", `{"type":"object","properties":{"a":{"$ref":"#"}},"patternProperties":{"^a":{"$ref":"#"}}}`,
			"in two ways that apply to one value"},
		{"reference cycle", `{"type":"object","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`,
			"without a step into the value"},
		{"recursions chained so that each level adds to the next", chainedRecursionsSchema(30), "in two ways that apply to one value"},
		{"chained recursions, two levels", chainedRecursionsSchema(2), "in two ways that apply to one value"},
		{"recursion through prefixItems and contains", `{"type":"array","prefixItems":[{"$ref":"#"}],"contains":{"$ref":"#"}}`,
			"in two ways that apply to one value"},
		{"recursion through a property and unevaluatedProperties of another schema",
			`{"type":"object","properties":{"a":{"$ref":"#"}},"allOf":[{"unevaluatedProperties":{"$ref":"#"}}]}`, "in two ways that apply to one value"},
		{"fan-out one past the bound", allOfSchema(MaxSchemaApplications), "more than 1000 subschemas to one value"},
		{"if, then or else one past the bound", conditionalSchema(MaxSchemaApplications - 2), "more than 1000 subschemas to one value"},
		{"recursion doubling through a $dynamicRef", dynamicDoublingSchema, "in two ways that apply to one value"},
		// A failing $ref leaves its properties unevaluated: an input 18 levels deep whose
		// innermost a is not an object took 11 s of CPU to validate.
		{"recursion through a $ref's property and unevaluatedProperties",
			`{"type":"object","$defs":{"t":{"properties":{"a":{"$ref":"#"}}}},"$ref":"#/$defs/t","unevaluatedProperties":{"$ref":"#"}}`,
			"in two ways that apply to one value"},
		// An input 18 levels deep, each with an x, took 2 s of CPU.
		{"recursion through a property and then", `{"properties":{"a":{"$ref":"#"}},"if":{"required":["x"]},` +
			`"then":{"properties":{"a":{"$ref":"#"}}}}`, "in two ways that apply to one value"},
		{"a schema that keeps the check busy", busyCheckSchema(700), "too intricate for the check of its cost"},
		{"many references to a schema that applies many in place", manyRefsSchema(2000), "too intricate for the check of its cost"},
		{"$recursiveAnchor below the root", `{"$schema":"https://json-schema.org/draft/2019-09/schema","$defs":{"t":{"$id":"t",` +
			`"$recursiveAnchor":true,"properties":{"a":{"$recursiveRef":"#"}}}},"$ref":"t"}`, "put $recursiveAnchor at the root only"},
		{"one object past MaxSchemaObjects, which the library compiles in quadratic time", objectsSchema(MaxSchemaObjects - 1),
			"over 5000 JSON objects"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := CompileInput(json.RawMessage(tc.schema))
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.Contains(t, ve.Problems[0].Message, tc.msg)
			var input map[string]any
			require.NoError(t, json.Unmarshal([]byte(tc.schema), &input))
			requireProblem(t, defWith(t, map[string]any{"input": input}), "/input", tc.msg)
		})
	}
}

// TestSchemaCostAllowsRecursion: recursive schemas that apply each subschema once per value
// (trees, lists, any JSON value), wide ones, ones that reuse definitions under many
// properties, and fan-outs within MaxSchemaApplications still compile.
func TestSchemaCostAllowsRecursion(t *testing.T) {
	t.Parallel()
	wide := map[string]any{}
	for i := range 2 * MaxSchemaApplications {
		wide[fmt.Sprintf("p%d", i)] = map[string]any{"type": "string"}
	}
	wideSchema, err := json.Marshal(map[string]any{"type": "object", "properties": wide})
	require.NoError(t, err)
	for name, schema := range map[string]string{
		"binary tree": `{"type":"object","$defs":{"n":{"type":"object","properties":{"v":{"type":"number"},` +
			`"left":{"$ref":"#/$defs/n"},"right":{"$ref":"#/$defs/n"}}}},"properties":{"root":{"$ref":"#/$defs/n"}}}`,
		"list":       `{"type":"object","properties":{"next":{"$ref":"#"},"v":{"type":"string"}}}`,
		"items tree": `{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}}}`,
		"any JSON value": `{"type":"object","$defs":{"v":{"anyOf":[{"type":["string","number","boolean","null"]},` +
			`{"type":"array","items":{"$ref":"#/$defs/v"}},{"type":"object","additionalProperties":{"$ref":"#/$defs/v"}}]}},` +
			`"additionalProperties":{"$ref":"#/$defs/v"}}`,
		"shared definitions": `{"type":"object","$defs":{"id":{"type":"string","minLength":1}},` +
			`"properties":{"a":{"$ref":"#/$defs/id"},"b":{"$ref":"#/$defs/id"},"c":{"allOf":[{"$ref":"#/$defs/id"}]}}}`,
		"fan-out within bounds":                    fanOutSchema(7),
		"at MaxSchemaObjects":                      objectsSchema(MaxSchemaObjects - 2),
		"definitions reused under many properties": reusedDefsSchema(5),
		"an OpenAPI-style union with a shared base": `{"type":"object","$defs":{"base":{"type":"object","properties":{"kind":{"type":"string"}},"required":["kind"]},` +
			`"card":{"allOf":[{"$ref":"#/$defs/base"},{"properties":{"number":{"type":"string"}}}]},` +
			`"bank":{"allOf":[{"$ref":"#/$defs/base"},{"properties":{"iban":{"type":"string"}}}]}},` +
			`"properties":{"payment":{"oneOf":[{"$ref":"#/$defs/card"},{"$ref":"#/$defs/bank"}]}}}`,
		"wide": string(wideSchema),
		// The old check refused these, counting more than validation applies.
		"fan-out at the bound":                     allOfSchema(MaxSchemaApplications - 1),
		"if, then or else at the bound":            conditionalSchema(MaxSchemaApplications - 3),
		"if, then or else, the two over the bound": conditionalSchema(600),
		"many recursions through one hub":          hubSchema(300),
		"recursions over a deep DAG":               recursiveDAGSchema(40),
		"a property and additionalProperties recurse": `{"type":"object","properties":{"a":{"$ref":"#"}},` +
			`"additionalProperties":{"$ref":"#"}}`,
		"prefixItems and items recurse":       `{"prefixItems":[{"$ref":"#"}],"items":{"$ref":"#"}}`,
		"the specification's extensible tree": strictTreeSchema,
		"a strict tree through a $ref": `{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"tree":{"type":"object",` +
			`"properties":{"data":true,"children":{"type":"array","items":{"$ref":"#"}}}}},"$ref":"#/$defs/tree","unevaluatedProperties":false}`,
		"then and else each recurse": `{"type":"object","if":{"required":["x"]},"then":{"properties":{"a":{"$ref":"#"}}},` +
			`"else":{"properties":{"a":{"$ref":"#"}}}}`,
		"a $dynamicRef to one anchor": `{"$dynamicAnchor":"n","type":"object","properties":{"a":{"$dynamicRef":"#n"},"b":{"$dynamicRef":"#n"}}}`,
		"a $recursiveRef to the root": `{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,` +
			`"type":"object","properties":{"children":{"type":"array","items":{"$recursiveRef":"#"}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := CompileInput(json.RawMessage(schema))
			require.NoError(t, err)
			require.Empty(t, s.Validate(map[string]any{}))
		})
	}
}

// largeSchema is n definitions of about 350 bytes, each an object on a shared base with a
// conditional, properties that refer to earlier definitions, an array of them and a tree,
// all properties of the root: some 350 KB for n = 1,000, the size of the schemas a large
// OpenAPI document makes.
func largeSchema(n int) string {
	props := []string{`"base":{"$ref":"#/$defs/base"}`}
	defs := []string{`"base":{"type":"object","properties":{"kind":{"type":"string"},"id":{"type":"string","minLength":1}},"required":["kind"]}`,
		`"tree":{"type":"object","properties":{"l":{"$ref":"#/$defs/tree"},"r":{"$ref":"#/$defs/tree"}}}`}
	for i := range n {
		prev, half := "base", "base"
		if i > 0 {
			prev, half = fmt.Sprintf("d%d", i-1), fmt.Sprintf("d%d", i/2)
		}
		props = append(props, fmt.Sprintf(`"d%d":{"$ref":"#/$defs/d%d"}`, i, i))
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","allOf":[{"$ref":"#/$defs/base"}],`+
			`"properties":{"a":{"$ref":"#/$defs/%s"},"b":{"type":"array","items":{"$ref":"#/$defs/%s"}},`+
			`"tree":{"$ref":"#/$defs/tree"},"s":{"type":"string","maxLength":10}},`+
			`"if":{"required":["a"]},"then":{"required":["b"]},"else":{"properties":{"c":{"$ref":"#/$defs/%s"}}}}`,
			i, prev, half, prev))
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"$defs":{` + strings.Join(defs, ",") + `}}`
}

// BenchmarkSchemaCost times checkSchemaCost alone on largeSchema(1000).
func BenchmarkSchemaCost(b *testing.B) {
	raw := largeSchema(1000)
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(raw))
	require.NoError(b, err)
	c := jsonschema.NewCompiler()
	require.NoError(b, c.AddResource(schemaURL, doc))
	s, err := c.Compile(schemaURL)
	require.NoError(b, err)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		require.NoError(b, checkSchemaCost(c, doc, s))
	}
}
