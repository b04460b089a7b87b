package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/internal/limits"
)

// MaxPageBytes is the most body one list answer carries: a page that would be larger is cut
// short and continues at its nextCursor (a page holds at least one item). Documented in
// docs/limits.md.
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

// pageOf reads the list parameters every list route takes: ?limit= (1 to limits.MaxPage,
// default limits.DefaultPage) and ?cursor=. A malformed one is a 400 naming it.
func pageOf(r *http.Request) (catalog.Page, error) {
	p := catalog.Page{Limit: limits.DefaultPage, Cursor: r.URL.Query().Get("cursor")}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > limits.MaxPage {
			return p, badRequest("/limit", fmt.Sprintf("limit must be an integer from 1 to %d", limits.MaxPage))
		}
		p.Limit = n
	}
	return p, nil
}

// errHeldCursor answers a cursor of a held list (heldPage) that is not one.
var errHeldCursor = badRequest("/cursor", "invalid cursor: list again from the first page, without cursor")

// heldPage is the page of items, a list its store gives whole (tokens, grants, versions,
// connections, templates), that page asks for: at most page.Limit items and at most
// MaxPageBytes, from the position its cursor names, and the cursor of the position after.
// The cursor is that position: a list that changed between two pages may show an item
// twice or skip one, as it may between two reads of a whole list.
func heldPage[T any](items []T, page catalog.Page) ([]T, string, error) {
	from := 0
	if page.Cursor != "" {
		n, err := strconv.Atoi(page.Cursor)
		if err != nil || n < 1 {
			return nil, "", errHeldCursor
		}
		from = min(n, len(items))
	}
	return boundedPage(page.Limit, func(limit int) ([]T, string, error) {
		to := min(from+limit, len(items))
		next := ""
		if to < len(items) {
			next = strconv.Itoa(to)
		}
		return items[from:to], next, nil
	})
}

// writeHeld answers with the page of items (heldPage) that page asks for.
func writeHeld[T any](s *Server, w http.ResponseWriter, r *http.Request, page catalog.Page, items []T) {
	items, next, err := heldPage(items, page)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, listBody{Data: nonNil(items), NextCursor: next})
}
