package sqlitestore_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
)

// TestTokensFromBeforeScopesBecomeAdmin opens a database made by the first schema only,
// holding a token, and finds the token migrated to admin (SPEC §9).
func TestTokensFromBeforeScopesBecomeAdmin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	initSQL, err := os.ReadFile("migrations/0001_init.sql")
	require.NoError(t, err)
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	for _, stmt := range []string{
		string(initSQL),
		`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`,
		`INSERT INTO schema_migrations VALUES (1, '0001_init.sql', 1)`,
		`INSERT INTO api_tokens (id, name, hash, created_at) VALUES ('old', 'old', x'0102', 1)`,
	} {
		_, err := db.ExecContext(ctx, stmt)
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())

	s := open(t, path)
	tok, err := s.TokenByHash(ctx, []byte{1, 2})
	require.NoError(t, err)
	require.Equal(t, auth.AdminScopes(), tok.Scopes)
	require.Nil(t, tok.ExpiresAt)
}
