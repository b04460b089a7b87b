package mcpserver

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTransportLogWords: mcp-go's "sampling response" for any client answer is logged in
// words that fit an elicitation answer too, with its attributes; other lines pass as they are.
func TestTransportLogWords(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := transportLog(slog.New(slog.NewTextHandler(&buf, nil))).With("component", "mcp")
	log.Info(deliveredWords, "session", "s1", "request", 7)
	log.Info("something else")
	out := buf.String()
	require.NotContains(t, out, "sampling")
	require.Contains(t, out, `msg="`+deliveredSaid+`" component=mcp session=s1 request=7`)
	require.Contains(t, out, `msg="something else" component=mcp`)
}
