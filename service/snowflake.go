package service

import (
	"fmt"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/worker"
)

// SnowflakeID returns a snowflake ID.
func (s *Service) SnowflakeID() (int64, error) { return s.w.Next() }

// SnowflakeIDs returns n snowflake IDs; n is at most MaxBatch.
func (s *Service) SnowflakeIDs(n int) ([]int64, error) {
	if n < 1 || n > MaxBatch {
		return nil, fmt.Errorf("%w: count %d: must be 1 to %d", frond.ErrInvalidArgument, n, MaxBatch)
	}
	return s.w.NextN(n)
}

// SnowflakeIssued counts snowflake IDs issued since start.
func (s *Service) SnowflakeIssued() uint64 { return s.w.Issued() }

// SnowflakeStats returns the current generator's statistics (zero while
// there is none).
func (s *Service) SnowflakeStats() snowflake.Stats { return s.w.Stats() }

// WorkerInfo returns the state of this node's worker ID.
func (s *Service) WorkerInfo() worker.Info { return s.w.Info() }

// Worker returns the worker ID this node holds, or -1.
func (s *Service) Worker() int64 { return s.w.Info().ID }

// serialNode is the node number of serial templates: the last worker ID
// held (segment-sourced serials are unique through the store; the node
// field only tells nodes apart).
func (s *Service) serialNode() int64 { return max(s.w.LastHeld(), 0) }
