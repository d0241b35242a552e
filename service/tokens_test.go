package service

import (
	"errors"
	"testing"

	"github.com/frond-id/frond"
)

// With tokens configured, every request for segment IDs carries a token
// that allows its tag; a refused one takes no ID. Other kinds need none.
func TestTokens(t *testing.T) {
	s := newKindsService(t, newClock(), Config{Tokens: map[string][]string{"t1": {"order", "pay"}, "t2": {"invoice"}}})
	for _, tag := range []string{"order", "invoice"} {
		if _, err := s.CreateTag(bg, frond.Tag{Name: tag, MaxID: 1, Step: 100}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		token, tag string
		ok         bool
	}{
		{"t1", "order", true}, {"t2", "invoice", true},
		{"", "order", false}, {"t2", "order", false}, {"nope", "order", false}, {"t1", "invoice", false},
	} {
		a, err := s.Take(bg, Request{Kind: KindSegment, Name: tc.tag, Token: tc.token})
		if tc.ok != (err == nil) || (!tc.ok && (!errors.Is(err, ErrForbidden) || Code(err) != frond.CodeForbidden)) {
			t.Errorf("token %q, tag %q: %v, %v", tc.token, tc.tag, a.Nums, err)
		}
	}
	// The refused requests took nothing: order's next ID is 2.
	if a, err := s.Take(bg, Request{Kind: KindSegment, Name: "order", Token: "t1"}); err != nil || a.Nums[0] != 2 {
		t.Fatalf("after refusals: %v, %v", a.Nums, err)
	}
	if _, err := s.Take(bg, Request{Kind: KindSnowflake}); err != nil {
		t.Fatalf("snowflake needs no token: %v", err)
	}
	if err := s.Peek(bg, &Request{Kind: KindSegment, Name: "order"}); !errors.Is(err, ErrForbidden) {
		t.Fatalf("Peek without a token: %v", err)
	}
}

func TestTokens_Config(t *testing.T) {
	for _, bad := range []map[string][]string{{"": {"order"}}, {"t": {}}, {"t": {"bad tag"}}} {
		var ce *ConfigError
		if err := (Config{Tokens: bad}).Validate(); !errors.As(err, &ce) {
			t.Errorf("Tokens %v: %v", bad, err)
		}
	}
}

// A run is one range from one segment: the tag's step by default, shorter
// at a segment's end.
func TestRun(t *testing.T) {
	s := newKindsService(t, newClock(), Config{})
	if _, err := s.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1, Step: 100}); err != nil {
		t.Fatal(err)
	}
	a, err := s.Take(bg, Request{Kind: KindSegment, Name: "order", Run: true})
	if err != nil || len(a.Ranges) != 1 || a.Ranges[0] != (frond.Range{Start: 1, End: 101, Stride: 1}) || !a.Request.Ranges {
		t.Fatalf("a run of the step: %+v, %v", a.Ranges, err)
	}
	a, err = s.Take(bg, Request{Kind: KindSegment, Name: "order", Run: true, Count: 30})
	if err != nil || len(a.Ranges) != 1 || a.Ranges[0].Len() != 30 {
		t.Fatalf("a run of 30: %+v, %v", a.Ranges, err)
	}
	if _, err := s.Take(bg, Request{Kind: KindSnowflake, Run: true}); Code(err) != frond.CodeInvalidArgument {
		t.Fatalf("a snowflake run: %v", err)
	}
	if _, err := s.Take(bg, Request{Kind: KindSegment, Name: "nope", Run: true}); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("a run of a missing tag: %v", err)
	}
}
