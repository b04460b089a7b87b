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
