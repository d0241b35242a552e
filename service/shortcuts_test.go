package service

import (
	"context"

	"github.com/frond-id/frond"
)

// Shortcuts for tests, through Take: the way every request goes.

func (s *Service) segmentID(ctx context.Context, tag string) (int64, error) {
	a, err := s.Take(ctx, Request{Kind: KindSegment, Name: tag})
	if err != nil {
		return 0, err
	}
	return a.Nums[0], nil
}

func (s *Service) segmentIDs(ctx context.Context, tag string, n int64) ([]frond.Range, error) {
	a, err := s.Take(ctx, Request{Kind: KindSegment, Name: tag, Count: n, Ranges: true})
	return a.Ranges, err
}

func (s *Service) snowflakeID() (int64, error) {
	a, err := s.Take(context.Background(), Request{Kind: KindSnowflake})
	if err != nil {
		return 0, err
	}
	return a.Nums[0], nil
}

func (s *Service) snowflakeIDs(n int) ([]int64, error) {
	a, err := s.Take(context.Background(), Request{Kind: KindSnowflake, Count: int64(n)})
	return a.Nums, err
}
