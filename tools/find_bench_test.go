package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/tools"
)

// manyTools are n workflow tools whose descriptions hold words words each, every
// workflow's its own (so that no two share a word).
func manyTools(tb testing.TB, n, words int) []*tools.Tool {
	tb.Helper()
	all := make([]*tools.Tool, n)
	for i := range all {
		desc := make([]string, words)
		for j := range desc {
			desc[j] = fmt.Sprintf("word%dx%d", i, j)
		}
		def, err := schemas.Decode(fmt.Appendf(nil, `{"name":"workflow-%d","title":"Workflow number %d","description":%q,
			"input":{"type":"object"},"steps":[{"id":"s","set":1}]}`, i, i, strings.Join(desc, " ")))
		require.NoError(tb, err)
		if all[i], err = tools.FromDefinition(def); err != nil {
			tb.Fatal(err)
		}
	}
	return all
}

// attackQuery is issue #27 item 4's query: 900 KB of 180,000 words (a few thousand
// distinct ones, repeated).
var attackQuery = func() string {
	words := make([]string, 180_000)
	for i := range words {
		words[i] = fmt.Sprintf("q%03d", i%5000)
	}
	return strings.Join(words, " ")[:900_000]
}()

// BenchmarkFind runs gorunner_find_workflows' ranking over 2,000 workflows of 50-word
// descriptions: with the attack's query, and with the largest query the tool accepts
// (MaxQueryWords distinct words, MaxQueryLength characters in all).
func BenchmarkFind(b *testing.B) {
	all := manyTools(b, 2000, 50)
	bound := make([]string, tools.MaxQueryWords)
	for i := range bound {
		bound[i] = fmt.Sprintf("%-*d", tools.MaxQueryLength/tools.MaxQueryWords-1, i)
		bound[i] = "w" + strings.ReplaceAll(bound[i][1:], " ", "o")
	}
	for name, query := range map[string]string{"attack": attackQuery, "bound": strings.Join(bound, " ")} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				tools.Find(all, query, "", tools.MaxFound)
			}
		})
	}
}
