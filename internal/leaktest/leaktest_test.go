package leaktest

import (
	"encoding/base64"
	"encoding/hex"
	"runtime"
	"strings"
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

// fails reports whether RequireAbsent fails on stored.
func fails(stored []byte, secret []byte) bool {
	r := &recorder{TB: nil}
	done := make(chan struct{})
	go func() {
		defer close(done)
		RequireAbsent(r, stored, secret)
	}()
	<-done
	return r.failed
}

// TestRequireAbsent finds a secret stored in each encoding it names, and passes a store
// without it.
func TestRequireAbsent(t *testing.T) {
	secret := []byte("s3cr3t\x00\xff bytes")
	for name, stored := range map[string]string{
		"as is":         "x" + string(secret) + "y",
		"hex":           "x" + hex.EncodeToString(secret),
		"HEX":           "x" + strings.ToUpper(hex.EncodeToString(secret)),
		"base64":        base64.StdEncoding.EncodeToString(secret),
		"raw base64url": "[" + base64.RawURLEncoding.EncodeToString(secret) + "]",
	} {
		require.True(t, fails([]byte(stored), secret), name)
	}
	require.False(t, fails([]byte("nothing of it here"), secret))
}
