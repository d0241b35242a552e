package service

import (
	"strconv"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/store/memstore"
	"github.com/frond-id/frond/worker"
)

// benchService is a service over a memory store with tag "bench", closed
// when b ends.
func benchService(b *testing.B) *Service {
	st := memstore.New(nil)
	st.CreateTag(bg, frond.Tag{Name: "bench", MaxID: 1, Step: 1_000_000})
	s, err := New(bg, Config{Snowflake: worker.Settings{MaxLead: time.Hour, PersistEvery: time.Hour}, Now: snowflake.NewSystemClock(0, 0).Now}, st, &memRegistry{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close(bg) })
	return s
}

// BenchmarkTake is a segment ID through Take, what every front end calls:
// the request's checks, the tag's mode and the engine.
func BenchmarkTake(b *testing.B) {
	s := benchService(b)
	r := Request{Kind: KindSegment, Name: "bench"}
	for b.Loop() {
		a, err := s.Take(bg, r)
		if err != nil {
			b.Fatal(err) // the answer budget full, say: a benchmark of the error path
		}
		a.Release()
	}
}

// BenchmarkTake_IdempotencyKey is BenchmarkTake with a new key per request
// (remembered, the oldest forgotten past 100,000), and a retry of one key
// (answered from memory).
func BenchmarkTake_IdempotencyKey(b *testing.B) {
	s := benchService(b)
	b.Run("new", func(b *testing.B) {
		r := Request{Kind: KindSegment, Name: "bench"}
		i := 0
		for b.Loop() {
			i++
			r.IdempotencyKey = "k" + strconv.Itoa(i)
			s.Take(bg, r)
		}
	})
	b.Run("retry", func(b *testing.B) {
		r := Request{Kind: KindSegment, Name: "bench", IdempotencyKey: "same"}
		for b.Loop() {
			s.Take(bg, r)
		}
	})
}
