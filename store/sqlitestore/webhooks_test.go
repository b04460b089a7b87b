package sqlitestore_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog/catalogtest"
)

// TestSealedWebhooks reads every row of the SQLite file, as one who copied it would: no
// webhook token is in it, yet each works.
func TestSealedWebhooks(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gorunner.db")
	catalogtest.SealedWebhooks(t, open(t, path), func(t *testing.T) []byte { return rows(t, path) })
}

// rows is every value of every row of every table of the file at path, each followed by
// a newline.
func rows(t *testing.T, path string) []byte {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	defer db.Close()
	var tables []string
	list, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	require.NoError(t, err)
	for list.Next() {
		var name string
		require.NoError(t, list.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, list.Err())
	var out bytes.Buffer
	for _, table := range tables {
		rs, err := db.Query(`SELECT * FROM "` + table + `"`)
		require.NoError(t, err)
		cols, err := rs.Columns()
		require.NoError(t, err)
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rs.Next() {
			require.NoError(t, rs.Scan(ptrs...))
			for _, v := range vals {
				if b, ok := v.([]byte); ok {
					out.Write(b)
				} else {
					fmt.Fprint(&out, v)
				}
				out.WriteByte('\n')
			}
		}
		require.NoError(t, rs.Err())
	}
	return out.Bytes()
}
