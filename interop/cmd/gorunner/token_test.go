package main_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTokenCreatePrintsTokenAloneOnALine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := exec.Command(binary(t), "token", "create", "ci", "--data-dir", dir).Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 1)
	require.Regexp(t, `^gr_[A-Za-z0-9_-]{43}$`, lines[0])

	list, err := exec.Command(binary(t), "token", "list", "--data-dir", dir).Output()
	require.NoError(t, err)
	require.Contains(t, string(list), "ci")
	require.NotContains(t, string(list), lines[0])
}

func TestTokenCreateWithScopesAndExpiry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := exec.Command(binary(t), "token", "create", "agent", "--data-dir", dir,
		"--scope", "runs:write:tag=billing", "--scope", "runs:read:tag=billing", "--expires", "720h").Output()
	require.NoError(t, err)
	require.Regexp(t, `^gr_[A-Za-z0-9_-]{43}$`, strings.TrimSpace(string(out)))
	list, err := exec.Command(binary(t), "token", "list", "--data-dir", dir).Output()
	require.NoError(t, err)
	require.Contains(t, string(list), "runs:write:tag=billing runs:read:tag=billing")
	require.NotContains(t, string(list), "never", "the token expires")

	for _, bad := range [][]string{{"--scope", "root"}, {"--scope", "runs:write:tag=Bad"}, {"--expires", "0s"}, {"--expires", "-1h"}} {
		cmd := exec.Command(binary(t), append([]string{"token", "create", "x", "--data-dir", dir}, bad...)...)
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%v: %s", bad, out)
	}
}
