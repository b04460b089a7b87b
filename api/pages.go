package api

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MaxPageBytes is the most body one list answer carries: a page that would be larger is cut
// short and continues at its nextCursor (a page holds at least one item). Documented in
// README, "Limits".
const MaxPageBytes = 4 << 20

// pageSlack is room left in MaxPageBytes for the envelope and the next cursor.
const pageSlack = 1 << 10

// boundedPage lists a page of at most limit items, and lists it again shorter as long as
// its answer would pass MaxPageBytes, so that the page's own next cursor continues
// exactly after its last item.
func boundedPage[T any](limit int, list func(limit int) ([]T, string, error)) ([]T, string, error) {
	for {
		items, next, err := list(limit)
		if err != nil {
			return nil, "", err
		}
		n, err := fitPage(items)
		if err != nil || n == len(items) {
			return items, next, err
		}
		limit = n
	}
}

// fitPage returns how many of items, from the first, fit in one list answer (at least 1).
func fitPage[T any](items []T) (int, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	size := pageSlack
	for i, it := range items {
		buf.Reset()
		if err := enc.Encode(it); err != nil {
			return 0, fmt.Errorf("encoding a list item: %w", err)
		}
		if size += buf.Len(); size > MaxPageBytes && i > 0 {
			return i, nil
		}
	}
	return len(items), nil
}
