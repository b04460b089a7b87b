// Package pgtest opens PostgreSQL stores for tests and benchmarks: on the database
// GORUNNER_TEST_POSTGRES names, each in a schema of its own with a random name, which (and
// only which: the database is shared) is dropped when the test ends.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/store/pgstore"
)

// URL is the database the tests use. Without GORUNNER_TEST_POSTGRES they skip, unless
// GORUNNER_TEST_POSTGRES_REQUIRED=1 makes that a failure.
func URL(t testing.TB) string {
	t.Helper()
	raw := os.Getenv("GORUNNER_TEST_POSTGRES")
	if raw == "" {
		if os.Getenv("GORUNNER_TEST_POSTGRES_REQUIRED") == "1" {
			t.Fatal("GORUNNER_TEST_POSTGRES is not set but GORUNNER_TEST_POSTGRES_REQUIRED=1")
		}
		t.Skip("GORUNNER_TEST_POSTGRES is not set")
	}
	return raw
}

// Schema creates a schema with a fresh name in the test database and drops it (with all
// it holds) when t ends, after the stores opened on it are closed.
func Schema(t testing.TB) string {
	t.Helper()
	db := URL(t)
	b := make([]byte, 8)
	_, err := rand.Read(b)
	require.NoError(t, err)
	schema := "gorunner_test_" + hex.EncodeToString(b)
	exec(t, db, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	t.Cleanup(func() { exec(t, db, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE") })
	return schema
}

// Config is the pool configuration of a store in schema.
func Config(t testing.TB, schema string) *pgxpool.Config {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(URL(t))
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	return cfg
}

// Open opens a store in a fresh schema, answering also the schema; the store is closed and
// the schema dropped when t ends.
func Open(t testing.TB) (*pgstore.Store, string) {
	t.Helper()
	schema := Schema(t)
	return OpenIn(t, schema), schema
}

// OpenIn opens another store on schema, as another process sharing it would; it is closed
// when t ends.
func OpenIn(t testing.TB, schema string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.OpenConfig(context.Background(), Config(t, schema))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// exec runs one statement on a connection of its own.
func exec(t testing.TB, db, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	require.NoError(t, err)
}

// StoreURL is a --store URL on the test database whose search_path is a fresh schema,
// dropped when t ends, for tests of processes that open the store themselves.
func StoreURL(t testing.TB) string {
	t.Helper()
	u, err := url.Parse(URL(t))
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", Schema(t))
	u.RawQuery = q.Encode()
	return u.String()
}
