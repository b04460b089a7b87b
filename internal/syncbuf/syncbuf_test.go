package syncbuf

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConcurrentWrites: writes from many goroutines all arrive whole, read while written.
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprintf(&b, "line %d\n", i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 800, b.Count("line "))
	require.Equal(t, 800, strings.Count(b.String(), "\n"))
}
