package main_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// cli runs the real binary as a client of s and returns its stdout, stderr and exit code.
func cli(t *testing.T, s *server, args ...string) (string, string, int) {
	t.Helper()
	return cliEnv(t, s, nil, args...)
}

// cliEnv is cli with extra environment variables.
func cliEnv(t *testing.T, s *server, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary(t), append(args, "--data-dir", s.dataDir)...)
	cmd.Env = append(os.Environ(), append([]string{"GORUNNER_URL=" + s.url, "GORUNNER_TOKEN="}, env...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return stdout.String(), stderr.String(), ee.ExitCode()
	}
	require.NoError(t, err)
	return stdout.String(), stderr.String(), 0
}

var (
	uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timePattern = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	hashPattern = regexp.MustCompile(`"(hash|webhookUrl)": "[^"]+"`)
)

// golden compares got, with IDs, times and the temp dir made stable, to testdata/name.
func golden(t *testing.T, name, dir, got string) {
	t.Helper()
	got = strings.ReplaceAll(got, dir, "<dir>")
	got = uuidPattern.ReplaceAllString(got, "<uuid>")
	got = timePattern.ReplaceAllString(got, "<time>")
	got = hashPattern.ReplaceAllString(got, `"$1": "<$1>"`)
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run the test with -update to create %s", path)
	require.Equal(t, string(want), got)
}

const helloYAML = `name: hello
description: Says hello.
input:
  type: object
  properties: { name: { type: string } }
  required: [name]
steps:
  - id: greet
    set: { message: "Hello, ${{ input.name }}!" }
`

// writeFile writes content to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

// TestCLIPipedGolden drives apply, run, runs and workflow commands piped, as a script
// would, and checks their JSON against golden files.
func TestCLIPipedGolden(t *testing.T) {
	t.Parallel()
	s := startServe(t, t.TempDir())
	files := t.TempDir()
	hello := writeFile(t, files, "hello.yaml", helloYAML)

	steps := []struct {
		golden string
		args   []string
	}{
		{"apply_created.golden", []string{"workflow", "apply", hello}},
		{"apply_unchanged.golden", []string{"workflow", "apply", hello}},
		{"run_wait.golden", []string{"run", "hello", "--input", `{"name": "Ada"}`, "--key", "ada-1", "--wait"}},
		{"workflow_list.golden", []string{"workflow", "list"}},
		{"publish_unchanged.golden", []string{"workflow", "publish", "hello"}},
	}
	for _, st := range steps {
		out, stderr, code := cli(t, s, st.args...)
		require.Equal(t, 0, code, stderr)
		golden(t, st.golden, files, out)
	}

	writeFile(t, files, "hello.yaml", strings.Replace(helloYAML, "Says hello.", "Says hello, warmly.", 1))
	out, stderr, code := cli(t, s, "workflow", "apply", hello)
	require.Equal(t, 0, code, stderr)
	golden(t, "apply_updated.golden", files, out)

	first, _, _ := cli(t, s, "run", "hello", "--input", `{"name": "Ada"}`, "--key", "ada-1")
	again, _, _ := cli(t, s, "run", "hello", "--input", `{"name": "Ada"}`, "--key", "ada-1")
	require.Equal(t, uuidPattern.FindString(first), uuidPattern.FindString(again), "--key replays the first run")

	out, stderr, code = cli(t, s, "runs", "list", "--workflow", "hello")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, 1, strings.Count(out, `"workflow": "hello"`), "one run for the one key: %s", out)
}

// TestCLITables checks the forms people read: tables and lines with -o table.
func TestCLITables(t *testing.T) {
	t.Parallel()
	s := startServe(t, t.TempDir())
	hello := writeFile(t, t.TempDir(), "hello.yaml", helloYAML)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"workflow", "apply", hello, "-o", "table"}, "hello: created, published version 1\n"},
		{[]string{"workflow", "apply", hello, "-o", "table"}, "hello: unchanged, version 1 is current\n"},
		{[]string{"workflow", "list", "-o", "table"}, "NAME   VERSION  PUBLISHED  REV  TITLE\nhello  1        true       1    \n"},
		{[]string{"workflow", "publish", "hello", "-o", "table"}, "hello: unchanged since version 1\n"},
	} {
		out, stderr, code := cli(t, s, tc.args...)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, tc.want, out, tc.args)
	}
	out, _, code := cli(t, s, "run", "hello", "--input", `{"name": "Ada"}`, "--wait", "-o", "table")
	require.Equal(t, 0, code)
	require.Contains(t, out, `completed in`)
	require.Contains(t, out, `→ {"message":"Hello, Ada!"}`)
	out, _, code = cli(t, s, "runs", "list", "-o", "table")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^ID\s+WORKFLOW\s+VERSION\s+ENV\s+STATUS\s+CREATED\s+TOOK\n[0-9a-f-]{36}\s+hello\s+1\s+production\s+completed`, out)
}
