package tools

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// naiveMatch is match as it was, comparing w with every word of the field: the reference
// the binary searches must agree with.
func naiveMatch(w string, words []string, equal, prefix int) int {
	best := 0
	for _, f := range words {
		switch {
		case f == w:
			return equal
		case len(w) >= minPrefix && len(f) >= minPrefix && (strings.HasPrefix(f, w) || strings.HasPrefix(w, f)):
			best = prefix
		}
	}
	return best
}

// TestFieldMatchAgreesWithTheScan: over random fields of words from a small alphabet (so
// that prefixes of either side abound), the sorted field's match scores every word as the
// scan of every word did.
func TestFieldMatchAgreesWithTheScan(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(27, 4))
	word := func() string {
		b := make([]byte, 1+rng.IntN(7))
		for i := range b {
			b[i] = "abc"[rng.IntN(3)]
		}
		return string(b)
	}
	for round := range 500 {
		words := make([]string, rng.IntN(30))
		for i := range words {
			words[i] = word()
		}
		f := fieldOf(append([]string(nil), words...))
		for range 20 {
			w := word()
			require.Equal(t, naiveMatch(w, words, 2, 1), f.match(w, 2, 1), fmt.Sprintf("round %d: %q in %q", round, w, words))
		}
	}
}

func TestQueryWords(t *testing.T) {
	t.Parallel()
	many := make([]string, MaxQueryWords+1)
	for i := range many {
		many[i] = fmt.Sprintf("w%d", i)
	}
	tests := []struct {
		query string
		words []string
		why   string
	}{
		{"Send the INVOICE, send it", []string{"send", "the", "invoice", "it"}, ""},
		{strings.Repeat("refund ", 100), []string{"refund"}, ""},
		{strings.Join(many[:MaxQueryWords], " "), many[:MaxQueryWords], ""},
		{strings.Join(many, " "), nil, "at most"},
		{" -- ", nil, "no words"},
	}
	for _, tt := range tests {
		words, problem := QueryWords(tt.query)
		if tt.why == "" {
			require.Nil(t, problem, tt.query)
			require.Equal(t, tt.words, words)
			continue
		}
		require.NotNil(t, problem, tt.query)
		require.Equal(t, "/query", problem.Path)
		require.Contains(t, problem.Message, tt.why)
	}
}
