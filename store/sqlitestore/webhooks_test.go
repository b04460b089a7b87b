package sqlitestore_test

import (
	"path/filepath"
	"testing"

	"github.com/gorunner/gorunner/catalog/catalogtest"
	"github.com/gorunner/gorunner/internal/leaktest"
)

// TestSealedWebhooks reads every row of the SQLite file, as one who copied it would: no
// webhook token is in it, yet each works.
func TestSealedWebhooks(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gorunner.db")
	catalogtest.SealedWebhooks(t, open(t, path), func(t *testing.T) []byte { return leaktest.SQLiteRows(t, path) })
}
