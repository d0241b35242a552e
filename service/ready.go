package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/worker"
)

// Check is one part of readiness.
type Check = worker.Check

// KindCheck says whether one kind of ID can be served now, and if not, why.
// A load balancer probes the kind it sends (GET /readyz/segment,
// /readyz/snowflake).
type KindCheck struct {
	Kind   string `json:"kind"`
	Ready  bool   `json:"ready"`
	Detail string `json:"detail,omitempty"`
}

// Readiness is every check, and per kind whether it can be served now.
type Readiness struct {
	Checks    []Check   `json:"checks"`
	Segment   KindCheck `json:"segment"`
	Snowflake KindCheck `json:"snowflake"`
}

// Ready checks the store, the worker ID and the clock.
func (s *Service) Ready(ctx context.Context) []Check { return s.Readiness(ctx).Checks }

// Readiness checks the store (one call), the worker ID and the clock.
func (s *Service) Readiness(ctx context.Context) Readiness {
	store, err := s.storeCheck(ctx)
	checks := append([]Check{store}, s.w.Checks()...)
	if sp := s.cfg.Spaces; sp != nil {
		// The keyed sequences' store: its persistence read again now and
		// then, as the segment store's (issue 58, item 6).
		warnings, err := sp.StoreCheck(ctx)
		c := Check{Name: "sequences_store", OK: err == nil}
		if err != nil {
			warnings = append([]string{err.Error()}, warnings...)
		}
		c.Detail = strings.Join(warnings, "; ")
		checks = append(checks, c)
	}
	return Readiness{Checks: slices.Clip(checks), Segment: s.segmentReady(store, err), Snowflake: s.SnowflakeReady()}
}

// SegmentReady says whether segment IDs can be served now: the store
// answers, or buffers still hold IDs (then only the tags they hold are
// served; the detail says so).
func (s *Service) SegmentReady(ctx context.Context) KindCheck {
	return s.segmentReady(s.storeCheck(ctx))
}

func (s *Service) storeCheck(ctx context.Context) (Check, error) {
	var err error
	if p, ok := s.store.(frond.Pinger); ok {
		err = p.Ping(ctx)
	} else {
		_, err = frond.TagsAfter(ctx, s.store, "", 1)
	}
	c := Check{Name: "store", OK: err == nil}
	if err != nil {
		c.Detail = err.Error()
	}
	if w, ok := s.store.(frond.Warner); ok && len(w.Warnings()) > 0 {
		c.Detail = strings.TrimPrefix(c.Detail+"; "+strings.Join(w.Warnings(), "; "), "; ")
	}
	return c, err
}

func (s *Service) segmentReady(store Check, err error) KindCheck {
	k := KindCheck{Kind: KindSegment, Ready: store.OK, Detail: store.Detail}
	if store.OK {
		return k
	}
	if errors.Is(err, segment.ErrDegraded) {
		// Some of several stores answer: their residues are served.
		k.Ready = true
		return k
	}
	var ids int64
	tags := 0
	for _, b := range s.seg.Stats() {
		if b.Remaining > 0 {
			ids += b.Remaining
			tags++
		}
	}
	if tags == 0 {
		k.Detail = "the segment store does not answer and no IDs are buffered: " + store.Detail
		return k
	}
	k.Ready = true
	k.Detail = fmt.Sprintf("the segment store does not answer (%s): serving the %d IDs buffered for %d tags; other tags fail (see segments for each tag's horizon)",
		store.Detail, ids, tags)
	return k
}

// SnowflakeReady says whether snowflake IDs can be served now: a worker ID
// is held, the registry has recorded a time past the clock, and the clock is
// not behind the last time used. It makes no network call.
func (s *Service) SnowflakeReady() KindCheck {
	ready, detail := s.w.Ready()
	return KindCheck{Kind: KindSnowflake, Ready: ready, Detail: detail}
}
