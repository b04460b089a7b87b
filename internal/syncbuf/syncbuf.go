// Package syncbuf is a byte buffer safe for concurrent use: the log sink of a test that
// reads what goroutines or child processes wrote while they still write.
package syncbuf

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer collects writes from any goroutine; its zero value is ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Count is how often substr was written so far (strings.Count of String).
func (b *Buffer) Count(substr string) int {
	return strings.Count(b.String(), substr)
}
