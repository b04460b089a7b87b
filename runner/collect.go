package runner

import "github.com/gorunner/gorunner/internal/limits"

// MaxListExamined bounds the runs looked through by a caller that gathers runs across list
// pages (RerunMany by workflow and status, `gorunner runs list`): it reads at most
// MaxListExamined/limits.MaxRunsExamined pages, each examining at most
// limits.MaxRunsExamined runs.
const MaxListExamined = 100_000

// Collect gathers up to n items of a list from cursor, reading its pages with page (asked
// for at most the items still wanted) and following their cursors, through pages that end
// short or empty too, for at most MaxListExamined/limits.MaxRunsExamined pages. It returns
// the items and the cursor of the rest of the list, "" when it reached the end. Asked for
// no items (n <= 0) it reads no page, and returns none and cursor as given: the rest of the
// list is all of it.
func Collect[T any](n int, cursor string, page func(limit int, cursor string) ([]T, string, error)) ([]T, string, error) {
	if n <= 0 {
		return nil, cursor, nil
	}
	var out []T
	for range MaxListExamined / limits.MaxRunsExamined {
		items, next, err := page(n-len(out), cursor)
		if err != nil {
			return nil, "", err
		}
		out, cursor = append(out, items...), next
		if cursor == "" || len(out) >= n {
			break
		}
	}
	return out, cursor, nil
}
