package service

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
)

// A retry with the same key gets the first answer again, for every kind; a
// new key gets new IDs.
func TestIdempotency_Replay(t *testing.T) {
	c := newClock()
	s := newKindsService(t, c, Config{Serials: map[string]SerialConfig{"inv": {Template: "INV{seq:6}", Tag: "inv", Step: 10}}})
	for _, tag := range []string{"order", "inv"} {
		if _, err := s.CreateTag(bg, frond.Tag{Name: tag, MaxID: 1, Step: 100}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []Request{
		{Kind: KindSegment, Name: "order", Count: 3},
		{Kind: KindSegment, Name: "order", Count: 5, Ranges: true},
		{Kind: KindSnowflake, Count: 2},
		{Kind: KindUUID, Count: 2, Version: 7},
		{Kind: KindSerial, Name: "inv", Count: 2},
	} {
		r.IdempotencyKey = "k-" + r.Kind + strings.Repeat("r", int(r.Count))
		first, err := s.Take(bg, r)
		if err != nil {
			t.Fatal(err)
		}
		again, err := s.Take(bg, r)
		if err != nil || !sameAnswer(first, again) {
			t.Fatalf("%+v: retry answered %+v, %v; first %+v", r, again, err, first)
		}
		r.IdempotencyKey += "-new"
		other, err := s.Take(bg, r)
		if err != nil || sameAnswer(first, other) {
			t.Fatalf("%+v: a new key answered the old IDs %+v, %v", r, other, err)
		}
	}
	if st := s.IdempotencyStats(); st.Replays != 5 || st.Entries != 10 {
		t.Fatalf("stats %+v", st)
	}
}

func sameAnswer(a, b Answer) bool {
	return slices.Equal(a.Nums, b.Nums) && slices.Equal(a.Strs, b.Strs) && slices.Equal(a.Ranges, b.Ranges)
}

// A key is the client's promise that the request is the same one: used for
// another request within the window, it is refused; after the window it
// is new. A malformed key is refused before any ID is taken.
func TestIdempotency_KeyRules(t *testing.T) {
	c := newClock()
	s := newKindsService(t, c, Config{})
	s.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1, Step: 100})
	s.CreateTag(bg, frond.Tag{Name: "pay", MaxID: 1, Step: 100})
	r := Request{Kind: KindSegment, Name: "order", Count: 2, IdempotencyKey: "abc"}
	first, _ := s.Take(bg, r)
	for _, other := range []Request{
		{Kind: KindSegment, Name: "pay", Count: 2, IdempotencyKey: "abc"},
		{Kind: KindSegment, Name: "order", Count: 3, IdempotencyKey: "abc"},
		{Kind: KindSegment, Name: "order", Count: 2, Form: FormBase62, IdempotencyKey: "abc"},
	} {
		if _, err := s.Take(bg, other); Code(err) != frond.CodeInvalidArgument || !strings.Contains(err.Error(), "different request") {
			t.Fatalf("%+v: %v", other, err)
		}
	}
	c.Add(DefaultIdempotencyWindow - time.Second)
	if a, _ := s.Take(bg, r); !sameAnswer(a, first) {
		t.Fatalf("within the window: %+v", a.Nums)
	}
	c.Add(time.Second)
	if a, _ := s.Take(bg, r); sameAnswer(a, first) {
		t.Fatalf("after the window the old answer %+v", a.Nums)
	}
	for _, bad := range []string{"with space", "tab\t", strings.Repeat("k", MaxIdempotencyKey+1), "é"} {
		r := Request{Kind: KindSegment, Name: "order", IdempotencyKey: bad}
		if err := s.Check(&r); Code(err) != frond.CodeInvalidArgument {
			t.Errorf("key %q: %v", bad, err)
		}
	}
	if st := s.IdempotencyStats(); st.Conflict != 3 {
		t.Fatalf("stats %+v", st)
	}
}

// A failed request is not remembered: its retry takes IDs once the cause
// is gone. Two callers with different tag tokens do not share keys.
func TestIdempotency_FailuresAndTokens(t *testing.T) {
	c := newClock()
	s := newKindsService(t, c, Config{Tokens: map[string][]string{"t1": {"order"}, "t2": {"order"}}})
	r := Request{Kind: KindSegment, Name: "order", Token: "t1", IdempotencyKey: "x"}
	if _, err := s.Take(bg, r); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("before the tag: %v", err)
	}
	s.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1, Step: 100})
	a1, err := s.Take(bg, r)
	if err != nil || a1.Nums[0] != 1 {
		t.Fatalf("after the tag: %v, %v", a1.Nums, err)
	}
	r.Token = "t2"
	if a2, err := s.Take(bg, r); err != nil || a2.Nums[0] != 2 {
		t.Fatalf("same key, another token: %v, %v", a2.Nums, err)
	}
}

// Many retries at once, while the first is still being served: one store
// call's IDs, the same answer for all.
func TestIdempotency_Concurrent(t *testing.T) {
	nodes, st := seqNodes(t, 1)
	s := nodes[0]
	gate := st.hold()
	r := Request{Kind: KindSegment, Name: "ticket", Count: 4, IdempotencyKey: "same"}
	var wg sync.WaitGroup
	answers := make([]Answer, 8)
	for i := range answers {
		wg.Go(func() {
			a, err := s.Take(bg, r)
			if err != nil {
				t.Error(err)
			}
			answers[i] = a
		})
	}
	// The first caller's store call waits at the gate; the others wait for
	// its answer (or, arriving later, find it remembered).
	testenv.WaitFor(t, "the first store call", func() bool { return st.allocs() == 1 })
	close(gate)
	wg.Wait()
	for _, a := range answers[1:] {
		if !sameAnswer(a, answers[0]) {
			t.Fatalf("answers differ: %v and %v", a.Nums, answers[0].Nums)
		}
	}
	if n := st.allocs(); n != 1 {
		t.Fatalf("%d store calls for one request and its retries", n)
	}
}

// Memory is bounded: past MaxEntries (or MaxIDs) the oldest answers are
// forgotten, and counted.
func TestIdempotency_Bounds(t *testing.T) {
	c := newClock()
	s := newKindsService(t, c, Config{Idempotency: Idempotency{MaxEntries: 2, MaxIDs: 10}})
	s.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1, Step: 1000})
	take := func(key string, n int64) Answer {
		a, err := s.Take(bg, Request{Kind: KindSegment, Name: "order", Count: n, IdempotencyKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := take("a", 1)
	take("b", 1)
	take("c", 1) // a goes
	if again := take("a", 1); sameAnswer(a, again) {
		t.Fatal("the oldest answer was kept past MaxEntries")
	}
	take("big", 10) // over MaxIDs: everything older goes
	if st := s.IdempotencyStats(); st.Entries != 1 || st.IDs != 10 || st.Evicted < 3 {
		t.Fatalf("stats %+v", st)
	}
	off := newKindsService(t, c, Config{Idempotency: Idempotency{Window: -1}})
	off.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1, Step: 1000})
	if _, err := off.Take(bg, Request{Kind: KindSegment, Name: "order", IdempotencyKey: "a"}); Code(err) != frond.CodeInvalidArgument {
		t.Fatalf("keys turned off: %v", err)
	}
}

// A caller that gives up while its IDs are being taken (a client timeout)
// leaves no gap when it retries with its key: the store call goes on, and
// the retry gets its answer.
func TestIdempotency_CallerGaveUp(t *testing.T) {
	nodes, st := seqNodes(t, 1)
	s := nodes[0]
	gate := st.hold()
	r := Request{Kind: KindSegment, Name: "ticket", Count: 2, IdempotencyKey: "retry-me"}
	ctx, cancel := context.WithCancel(bg)
	errc := make(chan error, 1)
	go func() {
		_, err := s.Take(ctx, r)
		errc <- err
	}()
	testenv.WaitFor(t, "the store call", func() bool { return st.allocs() == 1 })
	cancel()
	close(gate)
	<-errc // answered or not: its caller is gone
	a, err := s.Take(bg, r)
	if err != nil || !slices.Equal(a.Nums, []int64{1, 2}) || !a.Replayed {
		t.Fatalf("the retry: %v (replayed %v), %v; want the first call's 1, 2", a.Nums, a.Replayed, err)
	}
	if n := st.allocs(); n != 1 {
		t.Fatalf("%d store calls", n)
	}
	// Without a key the same story leaves a gap (the documented one).
	g2 := st.hold()
	ctx2, cancel2 := context.WithCancel(bg)
	go func() {
		s.Take(ctx2, Request{Kind: KindSegment, Name: "ticket"})
		errc <- nil
	}()
	testenv.WaitFor(t, "the second store call", func() bool { return st.allocs() == 2 })
	cancel2()
	<-errc
	close(g2)
	if a, err := s.Take(bg, Request{Kind: KindSegment, Name: "ticket"}); err != nil || a.Nums[0] != 4 {
		t.Fatalf("after a lost keyless request: %v, %v (want 4: 3 was skipped)", a.Nums, err)
	}
}

// Keys from outside: any bytes. A key is accepted exactly when it is 1 to
// 255 printable ASCII bytes, and an accepted key replays its answer.
func FuzzIdempotencyKey(f *testing.F) {
	for _, k := range []string{"a", "7f1c0e6a-order-42", "has space", "\x00", "é", strings.Repeat("k", 256), "~!{}"} {
		f.Add(k)
	}
	s := newKindsService(f, newClock(), Config{})
	s.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1, Step: 1000})
	f.Fuzz(func(t *testing.T, key string) {
		if key == "" {
			return // no key: an ordinary request
		}
		valid := len(key) <= MaxIdempotencyKey
		for i := 0; i < len(key); i++ {
			valid = valid && key[i] >= 0x21 && key[i] <= 0x7e
		}
		r := Request{Kind: KindSegment, Name: "order", Count: 2, IdempotencyKey: key}
		a, err := s.Take(bg, r)
		if !valid {
			if Code(err) != frond.CodeInvalidArgument {
				t.Fatalf("key %q: %v", key, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		b, err := s.Take(bg, r)
		if err != nil || !sameAnswer(a, b) || !b.Replayed {
			t.Fatalf("key %q: %v then %v, %v", key, a.Nums, b.Nums, err)
		}
	})
}

// Requests refused for their key (reused for another request, malformed)
// take no ID.
func TestIdempotency_RefusalsTakeNoID(t *testing.T) {
	s := newKindsService(t, newClock(), Config{})
	s.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1, Step: 1000})
	if a, err := s.Take(bg, Request{Kind: KindSegment, Name: "order", Count: 2, IdempotencyKey: "k"}); err != nil || a.Nums[1] != 2 {
		t.Fatalf("first: %v, %v", a.Nums, err)
	}
	for _, r := range []Request{
		{Kind: KindSegment, Name: "order", Count: 3, IdempotencyKey: "k"},
		{Kind: KindSegment, Name: "order", Count: 3, IdempotencyKey: "bad key"},
	} {
		if _, err := s.Take(bg, r); Code(err) != frond.CodeInvalidArgument {
			t.Fatalf("%+v: %v", r, err)
		}
	}
	if a, err := s.Take(bg, Request{Kind: KindSegment, Name: "order"}); err != nil || a.Nums[0] != 3 {
		t.Fatalf("after the refusals: %v, %v (want 3)", a.Nums, err)
	}
}
