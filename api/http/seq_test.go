package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/service"
)

// seqNodes starts n nodes on one lease store, each serving HTTP on a port
// of its own (its owner address), forwarding to each other, with the tag
// token "tok" allowing the space "msgs". forwarded counts the requests
// that arrived forwarded.
func seqNodes(t *testing.T, n int, forwarded *atomic.Int64) []*fixture {
	mem := &keyseq.MemLeases{}
	fw := SeqForwarder(nil, 5*time.Second)
	var out []*fixture
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		me := keyseq.Owner{Token: fmt.Sprintf("node%d", i), Addr: l.Addr().String()}
		sp := keyseq.NewSpaces(mem, me, keyseq.NodeOptions{TTL: time.Minute, Logger: slog.New(slog.DiscardHandler)}, fw)
		f := newFixture(t, api.Options{}, func(c *service.Config) {
			c.Spaces = sp
			c.Tokens = map[string][]string{"tok": {"msgs", "order"}}
		})
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(ForwardedHeader) != "" {
				forwarded.Add(1)
			}
			f.h.ServeHTTP(w, r)
		})}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		out = append(out, f)
	}
	return out
}

func TestSeq_HTTP(t *testing.T) {
	var forwarded atomic.Int64
	nodes := seqNodes(t, 2, &forwarded)
	a, b := nodes[0], nodes[1]
	tok := []string{TokenHeader, "tok"}
	a.want(a.do("POST", "/v1/spaces", `{"name": "msgs", "step": 100, "sections": 8}`), 201, `"name":"msgs"`, `"step":100`, `"sections":8`, `"slots":16384`)
	a.want(a.do("POST", "/v1/spaces", `{"name": "msgs"}`), 409, "tag_exists")
	b.want(b.do("POST", "/v1/spaces", `{"name": "bad name"}`), 400, "invalid_argument")
	b.want(b.do("POST", "/v1/spaces", `{"name": "x", "slots": 3}`), 400, "power of two")

	a.want(a.do("GET", "/v1/seq/msgs/conv-1", "", tok...), 200, `"space":"msgs"`, `"key":"conv-1"`, `"value":1,`, `"value_str":"1"`)
	a.want(a.do("GET", "/v1/seq/msgs/conv-1?n=3", "", tok...), 200, `"first":2,`, `"last":4,`, `"count":3`, `"first_str":"2"`)
	// b owns nothing (a took every section): it forwards, with the token.
	last := int64(4)
	for i := range 20 {
		r := []*fixture{a, b}[i%2].do("POST", "/v1/seq/msgs/conv-1", "", tok...)
		a.want(r, 200)
		var got seqJSON
		if err := json.Unmarshal([]byte(r.body), &got); err != nil || got.Value == nil || *got.Value <= last {
			t.Fatalf("answer %d: %s after %d", i, r.body, last)
		}
		last = *got.Value
	}
	if forwarded.Load() == 0 {
		t.Fatal("b answered without forwarding")
	}
	// A key is any 1 to 255 bytes, a slash too.
	a.want(b.do("GET", "/v1/seq/msgs/a%2Fb%20c", "", tok...), 200, `"key":"a/b c"`, `"value":1,`)
	a.want(b.do("GET", "/v1/seq/msgs/"+strings.Repeat("k", 255), "", tok...), 200)
	a.want(b.do("GET", "/v1/seq/msgs/"+strings.Repeat("k", 256), "", tok...), 400, "key of 256 bytes")
	// Refusals, before any value is taken.
	a.want(a.do("GET", "/v1/seq/msgs/k", ""), 403, "forbidden")
	a.want(a.do("GET", "/v1/seq/msgs/k?token=nope", ""), 403, "forbidden")
	a.want(a.do("GET", "/v1/seq/nope/k", "", TokenHeader, "tok"), 403, "forbidden")
	a.want(a.do("GET", "/v1/seq/msgs/k?n=0", "", tok...), 400, "n=")
	a.want(a.do("GET", "/v1/seq/msgs/k?n=10001", "", tok...), 400, "n=")
	a.want(a.do("GET", "/v1/seq/msgs/k?form=base62", "", tok...), 400, "form")
	a.want(a.do("GET", "/v1/seq/order/k", "", tok...), 404, "tag_not_found", "keyed sequence space")
	// The admin's view, and the metrics: series per space, none per key.
	r := a.do("GET", "/v1/spaces", "")
	a.want(r, 200, `"name":"msgs"`, `"held":8`)
	m := a.do("GET", "/metrics", "")
	a.want(m, 200, `frond_keyseq_sections{space="msgs",state="held"} 8`, `frond_keyseq_sections{space="msgs",state="total"} 8`,
		`frond_keyseq_members{space="msgs"} `, `frond_keyseq_section_moves_total{move="taken",space="msgs"} 8`, `frond_ids_issued_total{kind="seq"}`)
	if strings.Contains(m.body, "conv-1") {
		t.Fatal("a key in the metrics")
	}
	b.want(b.do("GET", "/metrics", ""), 200, `frond_keyseq_sections{space="msgs",state="held"} 0`, `frond_keyseq_forwarded_total{space="msgs"}`)
	// The dashboard's view (shown with the tags, to whoever may read them).
	snap := a.h.(*Server).snapshot(t.Context(), true)
	if len(snap.Spaces) != 1 || snap.Spaces[0].Name != "msgs" || snap.Spaces[0].Held != 8 || snap.Spaces[0].Values == 0 || snap.Spaces[0].LeaseLeftSeconds <= 0 {
		t.Fatalf("dashboard spaces: %+v", snap.Spaces)
	}
	if hidden := a.h.(*Server).snapshot(t.Context(), false); hidden.Spaces != nil {
		t.Fatalf("spaces shown to a page that may not read tags: %+v", hidden.Spaces)
	}
}

// A node with no keyed sequence store says so.
func TestSeq_NotConfigured(t *testing.T) {
	f := newFixture(t, api.Options{})
	f.want(f.do("GET", "/v1/seq/msgs/k", ""), 400, "serves no keyed sequences")
	f.want(f.do("POST", "/v1/spaces", `{"name":"msgs"}`), 400, "serves no keyed sequences")
}

// warnedLeases is a lease store whose server says it may lose data: Ping
// reads it again (as RedisSections reads the server's persistence).
type warnedLeases struct {
	keyseq.MemLeases
	why atomic.Pointer[string]
}

func (w *warnedLeases) Ping(context.Context) error { return nil }
func (w *warnedLeases) Warnings() []string {
	if p := w.why.Load(); p != nil {
		return []string{*p}
	}
	return nil
}

// Issue 58, item 6: /readyz says when the keyed sequences' store stops
// keeping its data (a later CONFIG SET appendonly no), as it says for the
// segment store.
func TestSeq_ReadyzSaysStoreWarnings(t *testing.T) {
	st := &warnedLeases{}
	sp := keyseq.NewSpaces(st, keyseq.Owner{Token: "me", Addr: "127.0.0.1:1"}, keyseq.NodeOptions{TTL: time.Minute, Logger: slog.New(slog.DiscardHandler)}, nil)
	f := newFixture(t, api.Options{}, func(c *service.Config) { c.Spaces = sp })
	f.want(f.do("GET", "/readyz", ""), 200, `"name":"sequences_store","ok":true`)
	why := "redis does not persist (appendonly no): keyed sequence values will be given again after a Redis crash or restart"
	st.why.Store(&why)
	f.want(f.do("GET", "/readyz", ""), 200, `"name":"sequences_store","ok":true,"detail":"redis does not persist (appendonly no)`)
}
