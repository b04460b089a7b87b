package runner_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/runner"
)

// TestCollect: Collect follows cursors through short and empty pages until it has n items
// or the list ends, asks each page for the items still wanted, and reads no more than
// MaxListExamined/limits.MaxRunsExamined pages; asked for none (n <= 0), it reads none.
func TestCollect(t *testing.T) {
	t.Parallel()
	maxPages := runner.MaxListExamined / limits.MaxRunsExamined
	empties := func(n int) [][]string { return make([][]string, n) }
	tests := []struct {
		name  string
		pages [][]string // the list, page by page; the last has no cursor
		n     int
		want  []string
		read  int  // pages read
		more  bool // a cursor comes back
	}{
		{"one page", [][]string{{"a", "b"}}, 5, []string{"a", "b"}, 1, false},
		{"short and empty pages", [][]string{{}, {"a"}, {}, {"b", "c"}, {"d"}}, 3, []string{"a", "b", "c"}, 4, true},
		{"to the end", [][]string{{}, {"a"}, {}}, 3, []string{"a"}, 3, false},
		{"bounded", append(empties(maxPages), []string{"a"}), 3, nil, maxPages, true},
		{"just within", append(empties(maxPages-1), []string{"a"}), 3, []string{"a"}, maxPages, false},
		{"none wanted", [][]string{{"a"}}, 0, nil, 0, false},
		{"fewer than none wanted", [][]string{{"a"}}, -1, nil, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			read, got := 0, 0
			items, next, err := runner.Collect(tc.n, "", func(limit int, cursor string) ([]string, string, error) {
				require.Equal(t, tc.n-got, limit, "the items still wanted")
				i := 0
				if cursor != "" {
					i, _ = strconv.Atoi(cursor)
				}
				read, got = read+1, got+len(tc.pages[i])
				if i+1 == len(tc.pages) {
					return tc.pages[i], "", nil
				}
				return tc.pages[i], strconv.Itoa(i + 1), nil
			})
			require.NoError(t, err)
			require.Equal(t, tc.want, items)
			require.Equal(t, tc.read, read)
			require.Equal(t, tc.more, next != "")
		})
	}
	_, _, err := runner.Collect(1, "", func(int, string) ([]string, string, error) { return nil, "", errors.New("down") })
	require.EqualError(t, err, "down")
}
