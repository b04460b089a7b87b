package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// moduleRoot is the GoRunner module's root, from this package.
const moduleRoot = "../../.."

// runnablePages are the pages whose examples TestDocsExamples runs, from the module's
// root: every shell and YAML block of them carries a marker saying what the test does.
var runnablePages = []string{"README.md", "docs/getting-started.md", "docs/workflows.md"}

// The addresses the pages use: GoRunner at 8080, the services a workflow calls at 9000.
// The test puts its own serve and its stand-in API there, in the text of every block.
const (
	docServe  = "127.0.0.1:8080"
	docLocal  = "localhost:8080"
	docStand  = "127.0.0.1:9000"
	blockWait = 2 * time.Minute
)

// docBlock is one fenced block of a page and the marker before it.
type docBlock struct {
	line   int    // of the opening fence, 1-based
	lang   string // sh, yaml, json…
	marker string // the comment's text: "run", "run: prints X", "file: NAME", "serve", "norun: why"
	body   string
}

// markedLangs are the languages whose blocks must carry a marker: none is skipped silently.
var markedLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "yaml": true, "yml": true}

var markerLine = regexp.MustCompile(`^<!-- (run|run: prints .+|run: exits [0-9]+|file: \S+|serve|norun: .+) -->$`)

// docBlocks reads the fenced blocks of a page; a shell or YAML block without a marker on
// the line before it (blank lines aside) is an error naming its line.
func docBlocks(page string) ([]docBlock, error) {
	var blocks []docBlock
	lines := strings.Split(page, "\n")
	for i := 0; i < len(lines); i++ {
		lang, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "```")
		if !ok {
			continue
		}
		b := docBlock{line: i + 1, lang: lang, marker: markerBefore(lines, i)}
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		if end == len(lines) {
			return nil, fmt.Errorf("line %d: the block is not closed", b.line)
		}
		b.body = strings.Join(lines[i+1:end], "\n") + "\n"
		i = end
		if b.marker == "" && markedLangs[lang] {
			return nil, fmt.Errorf("line %d: a ```%s block without a marker: put <!-- run -->, <!-- file: NAME -->, <!-- serve --> or <!-- norun: why --> before it", b.line, lang)
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// markerBefore is the marker on the last non-blank line before line i, or "".
func markerBefore(lines []string, i int) string {
	for j := i - 1; j >= 0; j-- {
		if strings.TrimSpace(lines[j]) == "" {
			continue
		}
		if m := markerLine.FindStringSubmatch(lines[j]); m != nil {
			return m[1]
		}
		return ""
	}
	return ""
}

// TestDocBlocks: markers are read, and an unmarked shell block is refused.
func TestDocBlocks(t *testing.T) {
	t.Parallel()
	page := "# P\n\n<!-- file: a.yaml -->\n```yaml\nname: a\n```\n\n<!-- run: prints x -->\n\n```sh\necho x\n```\n\n```json\n{}\n```\n"
	blocks, err := docBlocks(page)
	require.NoError(t, err)
	require.Equal(t, []docBlock{
		{line: 4, lang: "yaml", marker: "file: a.yaml", body: "name: a\n"},
		{line: 10, lang: "sh", marker: "run: prints x", body: "echo x\n"},
		{line: 14, lang: "json", body: "{}\n"},
	}, blocks)

	_, err = docBlocks("Text.\n\n```sh\nrm -rf /\n```\n")
	require.ErrorContains(t, err, "line 3: a ```sh block without a marker")
	_, err = docBlocks("<!-- run: maybe -->\n```sh\ntrue\n```\n")
	require.ErrorContains(t, err, "line 2", "a marker says prints or exits, nothing else")
	_, err = docBlocks("<!-- run -->\nText between.\n```yaml\na: 1\n```\n")
	require.ErrorContains(t, err, "line 3", "a marker counts for the block right after it only")
}

// TestDocsExamples runs the examples of the runnable pages against a real serve, in page
// order, each page in a directory of its own with a stand-in for the services its
// workflows call: the pages cannot say what GoRunner does not do.
func TestDocsExamples(t *testing.T) {
	t.Parallel()
	for _, name := range runnablePages {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(filepath.Join(moduleRoot, name))
			require.NoError(t, err)
			blocks, err := docBlocks(string(raw))
			require.NoError(t, err, name)
			runPage(t, name, blocks)
		})
	}
}

// docSession is where one page's blocks run: its directory, its serve, the stand-in.
type docSession struct {
	dir     string
	serve   *server
	replace *strings.Replacer
}

func runPage(t *testing.T, name string, blocks []docBlock) {
	stand := httptest.NewServer(newStandIn())
	t.Cleanup(stand.Close)
	addr := freeAddr(t) // the page's serve is told its own address before it starts
	d := &docSession{dir: t.TempDir(), replace: strings.NewReplacer(
		docServe, addr, docLocal, addr, docStand, strings.TrimPrefix(stand.URL, "http://"))}
	ran := 0
	for _, b := range blocks {
		where := fmt.Sprintf("%s:%d", name, b.line)
		body := d.replace.Replace(b.body)
		switch kind, arg, _ := strings.Cut(b.marker, ": "); kind {
		case "serve":
			require.Nil(t, d.serve, "%s: one serve block a page", where)
			d.serve = d.startServe(t, where, addr, body)
		case "file":
			require.NoError(t, os.WriteFile(filepath.Join(d.dir, arg), []byte(body), 0o644), where)
		case "run":
			require.NotNil(t, d.serve, "%s: a run block before the page's serve block", where)
			d.run(t, where, arg, body)
			ran++
		}
	}
	require.NotZero(t, ran, "%s runs no block", name)
}

var serveCommand = regexp.MustCompile(`^(?:gorunner|go run \./cmd/gorunner) serve((?: --?[a-z-]+(?:[ =][^ -]\S*)?)*)\n$`)

// startServe starts the serve a page's serve block shows, with its flags, on addr and
// the session's data directory (./.gorunner, where the page says the token is).
func (d *docSession) startServe(t *testing.T, where, addr, body string) *server {
	m := serveCommand.FindStringSubmatch(body)
	require.NotNil(t, m, "%s: a serve block is one command, `gorunner serve FLAGS`", where)
	dataDir := filepath.Join(d.dir, ".gorunner")
	args := append([]string{"serve", "--addr", addr, "--data-dir", dataDir}, strings.Fields(m[1])...)
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), "GORUNNER_LOG_LEVEL=warn")
	cmd.Stderr = os.Stderr
	return startServeCmd(t, cmd, dataDir)
}

// expectation is what a run marker's argument asks: an exit code ("exits N", default 0)
// or text the output must hold ("prints TEXT").
func expectation(arg string) (code int, prints string) {
	if n, ok := strings.CutPrefix(arg, "exits "); ok {
		code, _ = strconv.Atoi(n) // markerLine admits digits only
		return code, ""
	}
	prints, _ = strings.CutPrefix(arg, "prints ")
	return 0, prints
}

// run runs one block with bash -euo pipefail in the session's directory, the real binary
// first on the PATH as gorunner. arg may say what it must print or its exit code.
func (d *docSession) run(t *testing.T, where, arg, body string) {
	ctx, cancel := context.WithTimeout(context.Background(), blockWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", body)
	cmd.Dir = d.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a timeout ends the block's children too
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	// GORUNNER_URL stands for the CLI's default, the 127.0.0.1:8080 the pages' serve is at;
	// the token comes from ./.gorunner/admin-token, as on the reader's machine.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(binary(t))+":"+os.Getenv("PATH"), "GORUNNER_URL="+d.serve.url, "GORUNNER_TOKEN=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t.Logf("%s: running", where)
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err, where)
	}
	want, prints := expectation(arg)
	require.Equal(t, want, code, "%s exited %d:\n%s\n%s", where, code, body, out.String())
	require.Contains(t, out.String(), prints, "%s does not print %q:\n%s", where, prints, out.String())
}
