package schemas

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHookAsk(t *testing.T) {
	t.Parallel()
	const hook = `{"id":"a","hook":{"token":"t","ask":%s}}`
	ask := func(s string) []byte { return stepsWith(t, strings.Replace(hook, "%s", s, 1)) }
	valid := ask(`{"message":"Charge ${{ input.orderId }}?","schema":{"type":"object","properties":{
		"approved":{"type":"boolean"},"note":{"type":"string","maxLength":200},"mail":{"type":"string","format":"email"},
		"size":{"type":"string","enum":["s","m"]},"n":{"type":"integer","minimum":1},"x":{"type":"number"}},"required":["approved"]}}`)
	d, err := Decode(valid)
	require.NoError(t, err)
	require.Empty(t, Validate(d, ValidateOptions{}))
	require.Equal(t, "Charge ${{ input.orderId }}?", d.Steps[1].Hook.Ask.Message)

	tests := []struct {
		name, ask, path, msg string
	}{
		{"no message", `{"schema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}`, "/steps/1/hook/ask/message", "required"},
		{"bad message expression", `{"message":"${{ steps.later.output }}","schema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}`, "/steps/1/hook/ask/message", "no step"},
		{"no schema", `{"message":"m"}`, "/steps/1/hook/ask/schema", "required"},
		{"not an object type", `{"message":"m","schema":{"type":"string","properties":{"ok":{"type":"boolean"}}}}`, "/steps/1/hook/ask/schema/type", "type: object"},
		{"no properties", `{"message":"m","schema":{"type":"object"}}`, "/steps/1/hook/ask/schema/properties", "at least one"},
		{"nested object", `{"message":"m","schema":{"type":"object","properties":{"a":{"type":"object"}}}}`, "/steps/1/hook/ask/schema/properties/a/type", "no nesting"},
		{"array", `{"message":"m","schema":{"type":"object","properties":{"a~b":{"type":"array"}}}}`, "/steps/1/hook/ask/schema/properties/a~0b/type", "no nesting"},
		{"keyword not allowed", `{"message":"m","schema":{"type":"object","properties":{"a":{"type":"string","pattern":"x"}}}}`, "/steps/1/hook/ask/schema/properties/a/pattern", "not allowed"},
		{"top keyword not allowed", `{"message":"m","schema":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}}`, "/steps/1/hook/ask/schema/additionalProperties", "not allowed"},
		{"bad format", `{"message":"m","schema":{"type":"object","properties":{"a":{"type":"string","format":"ipv4"}}}}`, "/steps/1/hook/ask/schema/properties/a/format", "one of"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := Decode(ask(tc.ask))
			require.NoError(t, err)
			problems := Validate(d, ValidateOptions{})
			var found bool
			for _, p := range problems {
				found = found || (p.Path == tc.path && strings.Contains(p.Message, tc.msg))
			}
			require.True(t, found, "want %s %q in %+v", tc.path, tc.msg, problems)
		})
	}
}
