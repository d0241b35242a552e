package service

import (
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/worker"
)

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
