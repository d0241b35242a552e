package grpcapi

import (
	"strconv"
	"testing"

	"github.com/frond-id/frond/api"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

// FuzzNextSegment sends any tag, count and form: a refused request takes
// no ID, an answered one has exactly the IDs it asked for, and they are
// new.
func FuzzNextSegment(f *testing.F) {
	for _, s := range []struct {
		tag  string
		n    int64
		form string
	}{{"order", 0, ""}, {"order", 3, "base62"}, {"order", -1, ""}, {"order", 10001, ""}, {"nope", 1, ""},
		{"", 1, ""}, {"order", 2, "opaque"}, {"order", 1, "bogus"}, {"ord\x00er", 1, ""}, {"order", 1 << 62, "number"}} {
		f.Add(s.tag, s.n, s.form)
	}
	fx := start(f, api.Options{})
	seen := map[string]bool{}
	f.Fuzz(func(t *testing.T, tag string, n int64, form string) {
		before := issued(fx.svc, tag)
		out, err := fx.srv.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: tag, N: n, Form: form})
		after := issued(fx.svc, tag)
		if err != nil {
			if after != before {
				t.Fatalf("refused (%v) yet took %d IDs", err, after-before)
			}
			return
		}
		want := uint64(max(n, 1))
		got := max(len(out.Ids), len(out.IdStrs))
		if uint64(got) != want || after-before != want {
			t.Fatalf("asked %d, answered %d, took %d", want, got, after-before)
		}
		keys := out.IdStrs
		if len(out.Ids) > 0 { // opaque answers both; the numbers suffice
			keys = nil
			for _, id := range out.Ids {
				keys = append(keys, strconv.FormatInt(id, 10))
			}
		}
		for _, s := range keys {
			key := out.Form + ":" + s
			if seen[key] {
				t.Fatalf("ID %s answered twice", key)
			}
			seen[key] = true
		}
	})
}
