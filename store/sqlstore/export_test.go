package sqlstore

import "context"

// UseRows makes s serve sequence tags from Leaf's row, as on MySQL, even on
// a database with sequence objects: the tests cover both paths on one
// server. A real deployment never mixes them on one database.
func (s *Store) UseRows() { s.native = false }

// Native reports whether s serves sequence tags from sequence objects.
func (s *Store) Native() bool { return s.native }

// Exec runs a statement on s's database, behind the store's back (a tag
// deleted by Leaf, or a drop that failed).
func (s *Store) Exec(query string, args ...any) error {
	_, err := s.db.Exec(s.d.q(query), args...)
	return err
}

// QueryInt reads one integer behind the store's back.
func (s *Store) QueryInt(query string, args ...any) (int64, error) {
	var v int64
	err := s.db.QueryRow(s.d.q(query), args...).Scan(&v)
	return v, err
}

// Retry runs op as the store retries its transactions.
func (s *Store) Retry(ctx context.Context, op func(ctx context.Context) error) error {
	return s.retry(ctx, op)
}
