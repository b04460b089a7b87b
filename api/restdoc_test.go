package api

import (
	"flag"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gorunner/gorunner/internal/docgen"
)

var update = flag.Bool("update", false, "rewrite the generated region of docs/rest.md")

// TestRESTDoc: docs/rest.md lists the route table as it is; -update rewrites the list.
func TestRESTDoc(t *testing.T) {
	t.Parallel()
	docgen.Check(t, "../docs/rest.md", restDoc((&Server{}).table()), *update)
}

// restDoc renders the route table as Markdown: one table per resource, in table order.
func restDoc(routes []route) string {
	var b strings.Builder
	section := ""
	for _, rt := range routes {
		if s := resource(rt.pattern); s != section {
			section = s
			fmt.Fprintf(&b, "\n### `%s`\n\n| call | what it does | needs | answers |\n|---|---|---|---|\n", s)
		}
		fmt.Fprintf(&b, "| `%s %s` | %s | %s | %s |\n", rt.method, rt.pattern, docgen.Cell(rt.summary), docgen.Cell(needs(rt)), answers(rt))
	}
	return strings.TrimPrefix(b.String(), "\n")
}

// resource is the first two segments of a path: /api/workflows, /webhooks.
func resource(pattern string) string {
	parts := strings.SplitN(strings.TrimPrefix(pattern, "/"), "/", 3)
	if parts[0] != "api" || len(parts) == 1 {
		return "/" + parts[0]
	}
	return "/api/" + parts[1]
}

func needs(rt route) string {
	if rt.public {
		return "no token (the address is the credential)"
	}
	return rt.access.String()
}

// answers is the success status, with what the answer carries and what the call takes.
func answers(rt route) string {
	s := fmt.Sprintf("%d %s", rt.status, http.StatusText(rt.status))
	switch {
	case rt.list && rt.method == http.MethodGet:
		s += ", a page (`?limit=&cursor=`, `nextCursor`)"
	case rt.list:
		s += ", a list"
	}
	if rt.keyed != notKeyed {
		s += "; takes `Idempotency-Key`"
	}
	return s
}
