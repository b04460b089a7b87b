package runcard_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/mcpserver/runcard"
)

// loads are the ways an HTML page makes the browser fetch from another origin: an element
// attribute or a CSS url() naming a scheme or a scheme-relative address, an @import, a
// <link> or <base>, a refresh.
var loads = regexp.MustCompile(`(?i)\b(src|href|action|srcset|poster|data)\s*=\s*["']?\s*(https?:|//)|url\(\s*["']?\s*(https?:|//)|@import|<link\b|<base\b|http-equiv\s*=\s*["']?refresh`)

// TestLoadsNothing checks the embedded card for anything that would load from elsewhere:
// it is one self-contained file, and its own CSP allows no connection.
func TestLoadsNothing(t *testing.T) {
	require.Greater(t, len(runcard.HTML), 1000)
	require.Empty(t, loads.FindAllString(runcard.HTML, -1))
	require.Contains(t, runcard.HTML, `content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:;`)
	require.Regexp(t, `@modelcontextprotocol/ext-apps \d+\.\d+\.\d+ \(MIT\)`, runcard.HTML, "the bundled library's version and licence are noted")
	for _, planted := range []string{`<img src="https://x.example/a.png">`, `<script src=//cdn.example/x.js>`, `<link rel="stylesheet" href="a.css">`, `a{background:url( "http://x")}`} {
		require.NotEmpty(t, loads.FindAllString(planted, -1), "the check finds %s", planted)
	}
}

// TestGenerated builds the card again and compares it with the committed files, where the
// build's packages are installed (npm install in web/); elsewhere it skips.
func TestGenerated(t *testing.T) {
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat(filepath.Join("web", "node_modules", "esbuild")); err != nil || statErr != nil {
		t.Skip("node or web/node_modules missing: run npm install in mcpserver/runcard/web to compare the build")
	}
	out := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(out, "testdata"), 0o755))
	cmd := exec.Command(node, filepath.Join("web", "build.mjs"), out)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Run())
	for _, name := range []string{"run.html", filepath.Join("testdata", "host.js")} {
		want, err := os.ReadFile(name)
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		require.True(t, string(want) == string(got), "%s is not what web/build.mjs makes: go generate ./mcpserver/runcard/", name)
	}
}
