package service

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testclock"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/store/memstore"
	"github.com/frond-id/frond/storetest"
	"github.com/frond-id/frond/worker"
)

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkMemoryPerTag reports what a tag costs this node (the store's
// rows aside, they are the store's): bytes per loaded tag (one ID taken
// from its segment) and per idle tag (its buffer dropped by the
// sweep). b.N is unused: one measurement of 20,000 tags.
//
//	go test -run '^$' -bench MemoryPerTag -benchtime 1x ./service/
func BenchmarkMemoryPerTag(b *testing.B) {
	const n = 20_000
	c := newClock()
	wall := testclock.NewWall(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	st := memstore.New(nil)
	for i := range n {
		st.CreateTag(bg, frond.Tag{Name: fmt.Sprintf("tenant-%06d", i), Step: 1000})
	}
	s, err := New(bg, Config{Now: c.Now, Snowflake: worker.Settings{Sleep: c.Add, PersistEvery: time.Hour},
		Segment: segment.Settings{IdleAfter: time.Hour, Clock: wall}}, st, &memRegistry{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(bg)
	for b.Loop() {
	}
	base := heapInUse()
	for i := range n {
		if _, err := s.segmentID(bg, fmt.Sprintf("tenant-%06d", i)); err != nil {
			b.Fatal(err)
		}
	}
	loaded := heapInUse()
	s.seg.Sweep()
	wall.Add(2 * time.Hour)
	s.seg.Sweep()
	if left := len(s.seg.Stats()); left != 0 {
		b.Fatalf("%d buffers left after the sweep", left)
	}
	for range s.modes.idleEpochs + 1 { // the modes cached go as well
		s.modes.age()
	}
	idle := heapInUse()
	b.ReportMetric(float64(loaded-base)/n, "B/loaded-tag")
	b.ReportMetric(float64(int64(idle)-int64(base))/n, "B/idle-tag")
	runtime.KeepAlive(s)
}

// The modes of tags no one asks for are forgotten after segment.idle_after,
// as their buffers are: they used to stay for good, 200 bytes a tag ever
// asked for (a tag per day or per tenant grew the node without bound).
func TestModes_IdleTagsForgotten(t *testing.T) {
	c := newClock()
	st := memstore.New(nil)
	for _, name := range []string{"used", "idle"} {
		st.CreateTag(bg, frond.Tag{Name: name, Step: 10})
	}
	s, err := New(bg, Config{Now: c.Now, Snowflake: worker.Settings{Sleep: c.Add, PersistEvery: time.Hour},
		Segment: segment.Settings{IdleAfter: time.Minute}}, st, &memRegistry{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(bg)
	cached := func(tag string) bool { _, ok := s.modes.m.Load(tag); return ok }
	for _, name := range []string{"used", "idle"} {
		if _, err := s.segmentID(bg, name); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 { // two minutes of epochs; "used" asked for in each
		s.modes.age()
		if _, err := s.segmentID(bg, "used"); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, "the refresh", func() bool {
			v, _ := s.modes.m.Load("used")
			return v != nil && v.(*modeEntry).epoch == s.modes.epoch.Load()
		})
	}
	if cached("idle") || !cached("used") {
		t.Fatalf("after idle_after: idle cached %v, used cached %v", cached("idle"), cached("used"))
	}
	if _, err := s.segmentID(bg, "idle"); err != nil || !cached("idle") {
		t.Fatalf("asked for again: %v, cached %v", err, cached("idle"))
	}
}

// A tag in use keeps its cached mode through a store outage longer than
// segment.idle_after: its refreshes fail, and aging it out made its next
// request wait on the store it could not reach, buffered IDs unserved.
func TestModes_BusyTagKeptThroughOutage(t *testing.T) {
	c := newClock()
	st := storetest.NewFaulty()
	st.CreateTag(bg, frond.Tag{Name: "busy", Step: 1000})
	s, err := New(bg, Config{Now: c.Now, Snowflake: worker.Settings{Sleep: c.Add, PersistEvery: time.Hour},
		Segment: segment.Settings{IdleAfter: time.Minute, FixedStep: true}}, st, &memRegistry{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(bg)
	if _, err := s.segmentID(bg, "busy"); err != nil {
		t.Fatal(err)
	}
	st.SetDown(true)
	for i := range 6 { // three minutes of epochs, the store away
		s.modes.age()
		if _, err := s.segmentID(bg, "busy"); err != nil {
			t.Fatalf("epoch %d of the outage: %v (the buffer holds IDs)", i, err)
		}
		testenv.WaitFor(t, "the failed refresh", func() bool {
			v, ok := s.modes.m.Load("busy")
			return ok && !v.(*modeEntry).refreshing.Load()
		})
	}
	if _, ok := s.modes.m.Load("busy"); !ok {
		t.Fatal("the busy tag's mode was forgotten during the outage")
	}
}
