package docgen

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// root is the module's root, from this package.
const root = "../.."

var (
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
	fenced  = regexp.MustCompile("(?s)```.*?\n\\s*```")
	notSlug = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// anchors are the fragment names GitHub gives a page's headings: lower case, punctuation
// dropped, spaces as hyphens, a repeated name numbered.
func anchors(page string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(fenced.ReplaceAllString(page, ""), "\n") {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := strings.ReplaceAll(notSlug.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// TestLinks: every relative link of README.md and docs/ names a file that exists, and a
// fragment names a heading of its page.
func TestLinks(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	design, err := filepath.Glob(filepath.Join(root, "docs", "design", "*.md"))
	require.NoError(t, err)
	pages = append(append(pages, design...), filepath.Join(root, "README.md"))
	for _, page := range pages {
		raw, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, m := range mdLink.FindAllStringSubmatch(fenced.ReplaceAllString(string(raw), ""), -1) {
			target, fragment, _ := strings.Cut(m[1], "#")
			if strings.Contains(target, "://") || strings.HasPrefix(m[1], "mailto:") {
				continue
			}
			path := page
			if target != "" {
				path = filepath.Join(filepath.Dir(page), target)
			}
			_, err := os.Stat(path)
			require.NoError(t, err, "%s links to %s", page, m[1])
			if fragment != "" && strings.HasSuffix(path, ".md") {
				linked, err := os.ReadFile(path)
				require.NoError(t, err)
				require.True(t, anchors(string(linked))[fragment], "%s links to %s: no such heading", page, m[1])
			}
		}
	}
}

func TestAnchors(t *testing.T) {
	t.Parallel()
	got := anchors("# Egress: what HTTP steps may reach\n## Load balancer and `/mcp`\n```sh\n# not a heading\n```\n## Notes\n## Notes\n")
	require.Equal(t, map[string]bool{"egress-what-http-steps-may-reach": true, "load-balancer-and-mcp": true, "notes": true, "notes-1": true}, got)
}

// TestReadmeIsShort: the README says what GoRunner is and where to read on (issue #35);
// everything else belongs to a page of docs/.
func TestReadmeIsShort(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	require.LessOrEqual(t, strings.Count(string(raw), "\n"), 200, "README.md is over 200 lines: move the detail into docs/")
}
