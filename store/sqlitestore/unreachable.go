package sqlitestore

import (
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/gorunner/gorunner/store"
)

// unavailable wraps err with store.ErrUnreachable when SQLite could not serve the call
// for a reason outside the request, one that passes and leaves nothing half done (the
// statement or its transaction did not happen), so the caller may retry:
//
//   - SQLITE_BUSY, SQLITE_LOCKED: another process held the lock past the busy timeout;
//   - SQLITE_IOERR: the file could not be read or written (a failing disk, a network
//     file system gone away);
//   - SQLITE_CANTOPEN: the file could not be opened (removed, its permissions changed,
//     out of file descriptors);
//   - SQLITE_FULL: the disk is full.
//
// Every other error stays as it is, a bug or the request's own fault: a constraint
// violated, a corrupt file or not a database (SQLITE_CORRUPT, SQLITE_NOTADB: retrying
// cannot help), a misuse, a statement interrupted by its caller's context.
func unavailable(err error) error {
	var se *sqlite.Error
	if err == nil || errors.Is(err, store.ErrUnreachable) || !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff { // the primary result code of an extended one
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_FULL:
		return fmt.Errorf("%w: %w", store.ErrUnreachable, err)
	}
	return err
}
