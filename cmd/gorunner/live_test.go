package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/wire"
)

// ansiCSI matches the CSI sequences the CLI writes itself (colors, clear line).
var ansiCSI = regexp.MustCompile("\x1b\\[[0-9;]*[@-~]")

// shownColumns is how many terminal columns s takes, counted independently of the code
// under test: runes once the CLI's own ANSI sequences are removed.
func shownColumns(s string) int {
	return utf8.RuneCountInString(ansiCSI.ReplaceAllString(s, ""))
}

// requireNoRawServerText: nothing the server sent reaches the terminal raw.
func requireNoRawServerText(t *testing.T, out string) {
	t.Helper()
	require.NotContains(t, out, "\x1b[31m", "server's color sequence written raw")
	require.NotContains(t, out, "\u202e", "bidi override written raw")
}

// columnCases are step IDs and table cells from the server: escaping makes the first two
// longer on the terminal than in the string, the third is wider in bytes than in runes.
var columnCases = []struct {
	name string
	text string
}{
	{"plain ASCII", "deploy-prod"},
	{"control sequence", "a\x1b[31mb"},
	{"bidi override", "x\u202ey"},
	{"multi-byte", "café"},
}

// TestLiveViewAlignsEscapedStepIDs: the step ID column is as wide as the widest ID as
// printed (escaped), so every step's detail starts at the same column, and clip counts
// columns the same way the layout does.
func TestLiveViewAlignsEscapedStepIDs(t *testing.T) {
	t.Parallel()
	for _, tc := range columnCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &wire.Run{ID: "r1", Workflow: "wf", Environment: "production", Status: runner.StatusCompleted,
				Steps: []*wire.StepRecord{
					{ID: tc.text, Status: runner.StepCompleted},
					{ID: "b", Status: runner.StepCompleted},
				}}
			v := &liveView{}
			lines := v.lines(r)
			require.Len(t, lines, 3)
			idWidth := max(shownColumns(printable(tc.text)), 1)
			want := 2 + 1 + 1 + idWidth + 2 // indent, mark, space, ID column, gap
			for _, l := range lines[1:] {
				requireNoRawServerText(t, l)
				at := strings.LastIndex(l, string(runner.StepCompleted))
				require.Positive(t, at, l)
				require.Equal(t, want, shownColumns(l[:at]), "detail column of %q", l)

				require.Equal(t, l, clip(l, shownColumns(l)+1), "a line that fits is not cut")
				cut := clip(l, want+1)
				require.Equal(t, want, shownColumns(cut), "cut at the detail column: %q", cut)
				require.True(t, strings.HasPrefix(l, cut), "%q is a prefix of %q", cut, l)
			}
		})
	}
}

// TestTableAlignsEscapedCells: the table's columns are as wide as their cells as printed.
func TestTableAlignsEscapedCells(t *testing.T) {
	t.Parallel()
	for _, tc := range columnCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			p := &printer{out: &out}
			require.NoError(t, p.table([]string{"ID", "STATUS"}, [][]string{{tc.text, "ok"}, {"b", "ok"}}))
			requireNoRawServerText(t, out.String())
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			require.Len(t, lines, 3)
			want := max(shownColumns(printable(tc.text)), len("ID")) + 2
			require.Equal(t, want, shownColumns(lines[0][:strings.Index(lines[0], "STATUS")]), "header: %q", lines[0])
			for _, l := range lines[1:] {
				require.Equal(t, want, shownColumns(l[:strings.LastIndex(l, "ok")]), "row: %q", l)
			}
		})
	}
}
