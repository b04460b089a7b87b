package front

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRepliesGoToTheirRequest: a reply reaches the request it names only when it comes
// from that request's principal, once; other messages are not replies to the front layer.
func TestRepliesGoToTheirRequest(t *testing.T) {
	var r Replies
	id, ch, done := r.expect("ada")
	defer done()
	reply := []byte(`{"jsonrpc":"2.0","id":"` + id + `","result":{"action":"accept"}}`)
	require.False(t, r.deliver("mallory", reply), "another principal")
	require.False(t, r.deliver("ada", []byte(`{"jsonrpc":"2.0","id":7,"result":{}}`)), "mcp-go's own request")
	require.False(t, r.deliver("ada", []byte(`{"jsonrpc":"2.0","id":"`+replyIDPrefix+`unknown","result":{}}`)))
	require.True(t, r.deliver("ada", reply))
	require.JSONEq(t, `{"action":"accept"}`, string((<-ch).Result))
	require.False(t, r.deliver("ada", reply), "taken once")
}
