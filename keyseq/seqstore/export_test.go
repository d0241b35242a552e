package seqstore

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// SetPersistenceCheck replaces the check of the server's persistence that
// Ping repeats, and how often it repeats it.
func (s *RedisSections) SetPersistenceCheck(every time.Duration, check func(context.Context, *redis.Client) (string, error)) {
	s.watch.SetCheck(every, check)
}
