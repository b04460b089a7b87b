package docgen

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB that notes a failure and stops its goroutine, as t.FailNow does
// (require calls no other method of it but Name, for its message).
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) FailNow()              { r.failed = true; runtime.Goexit() }
func (r *recorder) Name() string          { return "recorder" }

// checks runs Check on a recorder and says whether it failed.
func checks(path, generated string, update bool) bool {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Check(r, path, generated, update)
	}()
	<-done
	return r.failed
}

func TestCheck(t *testing.T) {
	t.Parallel()
	page := "# Title\n\nProse.\n\n" + Begin + "\nold\n" + End + "\n\nMore prose.\n"
	path := filepath.Join(t.TempDir(), "page.md")
	require.NoError(t, os.WriteFile(path, []byte(page), 0o644))

	require.False(t, checks(path, "old\n", false), "the region as generated passes")
	require.True(t, checks(path, "new\n", false), "a region that differs fails")

	require.False(t, checks(path, "new\n", true), "update passes")
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "# Title\n\nProse.\n\n"+Begin+"\nnew\n"+End+"\n\nMore prose.\n", string(raw), "update rewrites the region alone")
	require.False(t, checks(path, "new\n", false))

	require.NoError(t, os.WriteFile(path, []byte("# No region\n"), 0o644))
	require.True(t, checks(path, "x\n", false), "a page without the markers fails")
}

func TestCell(t *testing.T) {
	t.Parallel()
	require.Equal(t, `a \| b c`, Cell(" a | b\nc "))
}
