package resp

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/api/apitest"
	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/service"
	"github.com/frond-id/frond/storetest"
)

// Keyed sequences over RESP: SPACE CREATE and LIST (admin), SEQ space key
// [COUNT n], as go-redis calls them.
func TestServer_Seq(t *testing.T) {
	sp := keyseq.NewSpaces(&keyseq.MemLeases{}, keyseq.Owner{Token: "me", Addr: "127.0.0.1:1"},
		keyseq.NodeOptions{TTL: time.Minute, Logger: slog.New(slog.DiscardHandler)}, nil)
	svc := apitest.Service(t, storetest.NewFaulty(), service.Config{Segment: segment.Settings{FixedStep: true}, Spaces: sp},
		frond.Tag{Name: "order", MaxID: 1, Step: 1000})
	c := dial(t, serve(t, svc, api.Options{}))
	got, err := c.Do(bg, "SPACE", "CREATE", "msgs", "STEP", "100", "SECTIONS", "4").Slice()
	if err != nil || len(got) != 8 || got[1] != "msgs" || got[3] != int64(100) || got[5] != int64(4) || got[7] != int64(keyseq.DefaultSlots) {
		t.Fatalf("SPACE CREATE: %v, %v", got, err)
	}
	if err := c.Do(bg, "SPACE", "CREATE", "msgs").Err(); err == nil || !strings.HasPrefix(err.Error(), "TAG_EXISTS ") {
		t.Fatalf("SPACE CREATE twice: %v", err)
	}
	if err := c.Do(bg, "SPACE", "CREATE", "x", "SLOTS", "3").Err(); err == nil || !strings.HasPrefix(err.Error(), "INVALID_ARGUMENT ") {
		t.Fatalf("SPACE CREATE SLOTS 3: %v", err)
	}
	for want := int64(1); want <= 3; want++ {
		if v, err := c.Do(bg, "SEQ", "msgs", "conv-1").Int64(); err != nil || v != want {
			t.Fatalf("SEQ msgs conv-1 = %d, %v; want %d", v, err, want)
		}
	}
	if vs, err := c.Do(bg, "SEQ", "msgs", "conv-1", "COUNT", "3").Int64Slice(); err != nil || len(vs) != 3 || vs[0] != 4 || vs[2] != 6 {
		t.Fatalf("SEQ COUNT 3 = %v, %v", vs, err)
	}
	if v, err := c.Do(bg, "SEQ", "msgs", "conv-2").Int64(); err != nil || v != 1 {
		t.Fatalf("another key = %d, %v", v, err)
	}
	for _, bad := range [][]any{{"SEQ", "nope", "k"}, {"SEQ", "msgs", ""}, {"SEQ", "msgs", "k", "COUNT", "0"}, {"SEQ", "msgs", "k", "FORM", "base62"}} {
		if err := c.Do(bg, bad...).Err(); err == nil {
			t.Errorf("%v answered", bad)
		}
	}
	if err := c.Do(bg, "SEQ", "nope", "k").Err(); err == nil || !strings.HasPrefix(err.Error(), "TAG_NOT_FOUND ") {
		t.Fatalf("SEQ of no space: %v", err)
	}
	list, err := c.Do(bg, "SPACE", "LIST").Slice()
	if err != nil || len(list) != 1 || list[0].([]any)[9] != int64(4) || list[0].([]any)[11] != int64(1) {
		t.Fatalf("SPACE LIST = %v, %v", list, err)
	}
}
