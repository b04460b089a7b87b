package schemas

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// fiveProblems has five problems: two that only validation finds and three values that do
// not decode, one of which (a bad duration) used to hide all the others.
const fiveProblems = `name: Bad Name
input: {type: object}
tagz: [x]
steps:
  - id: wait
    sleep: {duration: 2 minutes}
  - id: call
    http: {method: 5, url: "https://api.example/x"}
  - id: wait
    set: 1
`

// TestCheckListsEveryProblem: a definition with five problems gets five, each with its
// pointer, in one answer, the values that do not decode among them; no problem restates
// a value that did not decode.
func TestCheckListsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := Check([]byte(fiveProblems), ValidateOptions{})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	paths := []string{}
	for _, p := range ve.Problems {
		paths = append(paths, p.Path)
	}
	require.ElementsMatch(t, []string{"/name", "/tagz", "/steps/0/sleep/duration", "/steps/1/http/method", "/steps/2/id"}, paths, "%v", ve.Problems)
	require.Contains(t, err.Error(), "and 4 more problems")

	_, err = Decode([]byte(fiveProblems))
	require.ErrorAs(t, err, &ve, "several values that do not decode: each is listed")
	require.Len(t, ve.Problems, 3)

	_, err = Check([]byte("name: [unclosed"), ValidateOptions{})
	var de *DecodeError
	require.ErrorAs(t, err, &de, "a document that is not YAML is one problem")

	d, err := Check([]byte(`{"name":"fine","input":{"type":"object"},"steps":[{"id":"a","set":1}]}`), ValidateOptions{})
	require.NoError(t, err)
	require.Equal(t, "fine", d.Name)
}
