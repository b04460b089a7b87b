package sqlitestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// fileMode is the mode of the database file and of its -wal and -shm companions: they
// hold every run's input and output, so only the owner may read them.
const fileMode fs.FileMode = 0o600

// privateFiles creates the database file with fileMode before SQLite opens it (SQLite would
// use 0644 less the umask, and gives -wal and -shm the mode of the database file), and
// brings an existing file and companions back to fileMode whatever the umask.
func privateFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	err = f.Chmod(fileMode)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("making %s private: %w", path, err)
	}
	for _, companion := range []string{path + "-wal", path + "-shm"} {
		if err := os.Chmod(companion, fileMode); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("making %s private: %w", companion, err)
		}
	}
	return nil
}
