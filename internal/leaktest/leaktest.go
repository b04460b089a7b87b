// Package leaktest holds what the tests of secrets kept at rest share: reading everything a
// SQLite file stores, and requiring a secret absent from it in every encoding.
package leaktest

import (
	"bytes"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	_ "modernc.org/sqlite" // the "sqlite" driver
)

// SQLiteRows is every value of every row of every table of the SQLite file at path, each
// followed by a newline.
func SQLiteRows(t testing.TB, path string) []byte {
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
		rows, err := db.Query(`SELECT * FROM "` + table + `"`)
		require.NoError(t, err)
		cols, err := rows.Columns()
		require.NoError(t, err)
		vals, ptrs := make([]any, len(cols)), make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			require.NoError(t, rows.Scan(ptrs...))
			for _, v := range vals {
				fmt.Fprintf(&out, "%s\n", v)
			}
		}
		require.NoError(t, rows.Err())
	}
	require.NotEmpty(t, out.Bytes(), "the file holds nothing")
	return out.Bytes()
}

// RequireAbsent fails unless each of secrets is absent from stored as it is, in hex (lower
// and upper case) and in base64 (standard and URL alphabets, padded or not).
func RequireAbsent(t testing.TB, stored []byte, secrets ...[]byte) {
	t.Helper()
	for _, s := range secrets {
		forms := map[string][]byte{
			"as is": s,
			"hex":   []byte(hex.EncodeToString(s)),
			"HEX":   bytes.ToUpper([]byte(hex.EncodeToString(s))),
		}
		for name, enc := range map[string]*base64.Encoding{"base64": base64.StdEncoding, "raw base64": base64.RawStdEncoding,
			"base64url": base64.URLEncoding, "raw base64url": base64.RawURLEncoding} {
			forms[name] = []byte(enc.EncodeToString(s))
		}
		for name, form := range forms {
			require.Falsef(t, bytes.Contains(stored, form), "a secret is stored (%s)", name)
		}
	}
}
