package oauth

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDocCacheBounded fills the cache past MaxCachedClientDocuments: expired entries go
// first, then the one closest to expiring; the cache never grows past its bound.
func TestDocCacheBounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newDocCache()
	for i := range MaxCachedClientDocuments {
		c.put("doc"+strconv.Itoa(i), &clientInfo{}, time.Hour+time.Duration(i)*time.Second, now)
	}
	c.put("expiring", &clientInfo{}, time.Minute, now)
	require.Len(t, c.entries, MaxCachedClientDocuments)
	_, ok := c.get("doc0", now)
	require.False(t, ok, "the entry closest to expiring made room")

	later := now.Add(2 * time.Minute)
	c.put("new", &clientInfo{}, time.Hour, later)
	require.Len(t, c.entries, MaxCachedClientDocuments)
	_, ok = c.get("doc1", later)
	require.True(t, ok, "an expired entry went first")
	_, ok = c.get("new", later)
	require.True(t, ok)
}
