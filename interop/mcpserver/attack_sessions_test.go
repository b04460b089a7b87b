package mcpserver_test

import (
	"io"
	"net/http"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/mcpserver"
)

// TestAttackSessionFlood: a client with any valid token sends initialize again and again,
// never ending a session. mcp-go keeps each session (about 16 KB) until a DELETE, so
// before mcpserver.MaxSessionsPerPrincipal 3,000 of them held 48 MB for good, and every
// list_changed went to all of them. Now the principal's oldest sessions are ended past the
// limit: the heap stays bounded, and the newest sessions (the caller's own, and another
// principal's) keep working. Not parallel: it reads the process's heap.
func TestAttackSessionFlood(t *testing.T) {
	f := newFixture(t, greetDef)
	otherToken := f.mint("admin")
	other := f.open(otherToken)
	const floods = 3000
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapInuse)
	}
	initialize := func() string {
		res := f.raw(f.token, "POST", initialize)
		require.Equal(t, http.StatusOK, res.StatusCode)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.Header.Get("Mcp-Session-Id")
	}
	for range mcpserver.MaxSessionsPerPrincipal {
		initialize() // up to the limit: what is held from now on stays
	}
	before := heap()
	var last string
	for range floods {
		last = initialize()
	}
	grown := heap() - before
	require.Less(t, grown, int64(floods*16<<10)/2, "the heap grew %d bytes over %d sessions", grown, floods)

	for token, id := range map[string]string{f.token: last, otherToken: other} {
		res := f.raw(token, "POST", `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, "Mcp-Session-Id", id)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Contains(t, rpcBody(t, res), "result")
	}
}
