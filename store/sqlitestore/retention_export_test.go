package sqlitestore

import "context"

// AutoVacuum is the file's auto_vacuum mode (2: incremental).
func (s *Store) AutoVacuum(ctx context.Context) (int, error) {
	var mode int
	err := s.db.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&mode)
	return mode, err
}
