package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/frond-id/frond"
	frondclient "github.com/frond-id/frond/client"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

// The rule of forms across protocols (docs/kinds.md#forms-across-protocols),
// through the binary: a tag's configured form is answered wherever the
// protocol can carry it, and refused with form_not_carried, naming the
// form, where it cannot: never plain numbers, never an empty answer.
func TestE2E_FormsAcrossProtocols(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	os.WriteFile(keyFile, []byte("an obfuscation key, long enough\n"), 0o600)
	cfg := filepath.Join(dir, "frond.yaml")
	os.WriteFile(cfg, []byte(`obfuscation:
  key_file: `+keyFile+`
  scheme: ff1
forms:
  op: opaque
  op62: opaque62
  b62: base62
`), 0o644)
	s := mustStart(t, filepath.Join(dir, "data"), "--config", cfg, "--grpc-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0")
	tags := []string{"plain", "op", "op62", "b62"}
	for _, tag := range tags {
		if code, body := s.req("POST", "/v1/tags", `{"name":"`+tag+`","step":100}`); code != 201 {
			t.Fatalf("create %s: %d %s", tag, code, body)
		}
	}
	ctx := t.Context()
	conn, err := grpc.NewClient(s.listenAddr("gRPC"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ids := frondv1.NewIDServiceClient(conn)
	rc := redis.NewClient(&redis.Options{Addr: s.respAddr(), Protocol: 2})
	defer rc.Close()
	cl, err := frondclient.New(frondclient.Options{Servers: []string{s.listenAddr("gRPC")}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	// Each call answers the IDs as text, or an error.
	http := func(path string) func(tag string) ([]string, error) {
		return func(tag string) ([]string, error) {
			code, body := s.get(strings.ReplaceAll(path, "TAG", url.PathEscape(tag)))
			if code != 200 {
				return nil, fmt.Errorf("%d %s", code, body)
			}
			return answerIDs(t, body)
		}
	}
	calls := []struct {
		name string
		call func(tag string) ([]string, error)
		// what each tag gets: plain (numbers in order), opaque (permuted
		// numbers), text (11 characters), or refused
		want map[string]string
	}{
		{"/v1/segment", http("/v1/segment/TAG?n=2"), map[string]string{"op": "opaque", "op62": "text", "b62": "text"}},
		{"Leaf /api/segment/get", http("/api/segment/get/TAG"), map[string]string{"op": "opaque", "op62": "refused", "b62": "refused"}},
		{"TinyID nextId", http("/tinyid/id/nextId?bizType=TAG&batchSize=2"), map[string]string{"op": "opaque", "op62": "refused", "b62": "refused"}},
		{"TinyID nextIdSimple", http("/tinyid/id/nextIdSimple?bizType=TAG&batchSize=2"), map[string]string{"op": "opaque", "op62": "refused", "b62": "refused"}},
		{"TinyID nextSegmentId", http("/tinyid/id/nextSegmentId?bizType=TAG"), map[string]string{"op": "refused", "op62": "refused", "b62": "refused"}},
		{"gRPC NextSegment", func(tag string) ([]string, error) {
			out, err := ids.NextSegment(ctx, &frondv1.NextSegmentRequest{Tag: tag, N: 2})
			if err != nil {
				return nil, err
			}
			if len(out.GetIdStrs()) > 0 {
				return out.GetIdStrs(), nil
			}
			return decimal(out.GetIds()), nil
		}, map[string]string{"op": "opaque", "op62": "text", "b62": "text"}},
		{"gRPC NextSegmentRanges", func(tag string) ([]string, error) {
			out, err := ids.NextSegmentRanges(ctx, &frondv1.NextSegmentRangesRequest{Tag: tag, N: 2})
			if err != nil {
				return nil, err
			}
			return []string{strconv.FormatInt(out.GetRanges()[0].GetStart(), 10)}, nil
		}, map[string]string{"op": "refused", "op62": "refused", "b62": "refused"}},
		{"RESP INCR", func(tag string) ([]string, error) {
			id, err := rc.Incr(ctx, tag).Result()
			return []string{strconv.FormatInt(id, 10)}, err
		}, map[string]string{"op": "opaque", "op62": "refused", "b62": "refused"}},
		{"RESP SEGMENT", func(tag string) ([]string, error) {
			v, err := rc.Do(ctx, "SEGMENT", tag, "COUNT", "2").Slice()
			out := make([]string, len(v))
			for i, x := range v {
				out[i] = fmt.Sprint(x)
			}
			return out, err
		}, map[string]string{"op": "opaque", "op62": "text", "b62": "text"}},
		{"client Next", func(tag string) ([]string, error) {
			id, err := cl.Next(ctx, tag)
			return []string{strconv.FormatInt(id, 10)}, err
		}, map[string]string{"op": "opaque", "op62": "refused", "b62": "refused"}},
		{"client NextN", func(tag string) ([]string, error) {
			out, err := cl.NextN(ctx, tag, 2)
			return decimal(out), err
		}, map[string]string{"op": "opaque", "op62": "refused", "b62": "refused"}},
		{"client NextStrings", func(tag string) ([]string, error) {
			return cl.NextStrings(ctx, tag, 2)
		}, map[string]string{"op": "opaque", "op62": "text", "b62": "text"}},
		{"client NextRanges", func(tag string) ([]string, error) {
			rs, err := cl.NextRanges(ctx, tag, 2)
			if err != nil {
				return nil, err
			}
			return []string{strconv.FormatInt(rs[0].Start, 10)}, nil
		}, map[string]string{"op": "refused", "op62": "refused", "b62": "refused"}},
	}
	forms := map[string]string{"op": "opaque", "op62": "opaque62", "b62": "base62"}
	for _, c := range calls {
		for _, tag := range tags {
			want := c.want[tag]
			if tag == "plain" {
				want = "plain"
			}
			got, err := c.call(tag)
			switch {
			case want == "refused":
				// The error names the tag's form and says where to ask.
				// (form_not_carried, FORM_NOT_CARRIED, or gRPC's status
				// message, "form not carried by this API: ...").
				msg := ""
				if err != nil {
					msg = strings.ToLower(strings.ReplaceAll(err.Error(), "_", " "))
				}
				if err == nil || !strings.Contains(msg, "form not carried") || !strings.Contains(err.Error(), `"`+forms[tag]+`"`) ||
					!strings.Contains(err.Error(), "NextStrings") {
					t.Errorf("%s of %s: %v, %v; want form_not_carried naming %s", c.name, tag, got, err, forms[tag])
				}
				if strings.HasPrefix(c.name, "client") && !errors.Is(err, frond.ErrFormNotCarried) {
					t.Errorf("%s of %s: %v is not frond.ErrFormNotCarried", c.name, tag, err)
				}
			case err != nil:
				t.Errorf("%s of %s: %v; want %s IDs", c.name, tag, err, want)
			case len(got) == 0:
				t.Errorf("%s of %s: no ID", c.name, tag)
			default:
				for _, v := range got {
					if k := kindOf(v); k != want {
						t.Errorf("%s of %s: %q is %s, want %s (all: %v)", c.name, tag, v, k, want, got)
					}
				}
			}
		}
	}
}

// frond bench counts the IDs of every form, and checks them for
// duplicates, over every protocol that answers the form; over one that
// cannot, the errors say why (form_not_carried).
func TestE2E_BenchForms(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	os.WriteFile(keyFile, []byte("an obfuscation key, long enough\n"), 0o600)
	cfg := filepath.Join(dir, "frond.yaml")
	os.WriteFile(cfg, []byte("obfuscation: {key_file: "+keyFile+", scheme: ff1}\nforms: {op62: opaque62, b32: base32}\n"), 0o644)
	s := mustStart(t, filepath.Join(dir, "data"), "--config", cfg, "--grpc-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0")
	for _, tag := range []string{"op62", "b32"} {
		if code, body := s.req("POST", "/v1/tags", `{"name":"`+tag+`","step":1000}`); code != 201 {
			t.Fatalf("create %s: %d %s", tag, code, body)
		}
	}
	for _, tc := range []struct{ protocol, server, tag, extra, refused string }{
		{"http", s.url, "op62", "--batch=10", ""},
		{"http", s.url, "b32", "", ""},
		{"grpc", s.listenAddr("gRPC"), "op62", "--batch=10", ""},
		{"resp", s.respAddr(), "op62", "", ""},
		{"resp", s.respAddr(), "b32", "--batch=5", ""},
		{"leaf", s.url, "op62", "", "form_not_carried"},
	} {
		args := []string{"bench", "--json", "--protocol", tc.protocol, "--server", tc.server, "--tag", tc.tag,
			"--duration", "400ms", "--warmup", "0s", "--concurrency", "4"}
		if tc.extra != "" {
			args = append(args, tc.extra)
		}
		if tc.refused != "" {
			// Said at once, as a missing tag is.
			out, err := exec.Command(binary, args...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.refused) || !strings.Contains(string(out), `"opaque62"`) {
				t.Errorf("%s of %s: %v\n%s; want it refused with %s", tc.protocol, tc.tag, err, out, tc.refused)
			}
			continue
		}
		out, _ := exec.Command(binary, args...).Output()
		var res struct {
			IDs, Duplicates float64
			Errors          map[string]any
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("%v: %v in %s", args, err, out)
		}
		if res.IDs < 100 || res.Duplicates != 0 || len(res.Errors) != 0 {
			t.Errorf("%s of %s %s: %s", tc.protocol, tc.tag, tc.extra, out)
		}
	}
}

// kindOf says what an answered ID looks like: plain (a small number: the
// tags are new), opaque (a permuted one: below a million by a chance of
// 10^-13), text, or other.
func kindOf(v string) string {
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case len(v) > 0 && len(v) <= 11 && (err != nil || v[0] == '0'): // base62 is 11 characters, opaque62 at most 11
		return "text"
	case err == nil && n > 0 && n < 1_000_000:
		return "plain"
	case err == nil && n >= 1_000_000:
		return "opaque"
	}
	return "other"
}

func decimal(ids []int64) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strconv.FormatInt(id, 10)
	}
	return out
}

// answerIDs reads the IDs of an HTTP answer: /v1's JSON, TinyID's JSON,
// or text (Leaf's one ID, TinyID's comma-separated list).
func answerIDs(t *testing.T, body string) ([]string, error) {
	t.Helper()
	if !strings.HasPrefix(body, "{") {
		return strings.Split(strings.TrimSpace(body), ","), nil
	}
	var out struct {
		ID      *int64          `json:"id"`
		IDStr   string          `json:"id_str"`
		IDs     []int64         `json:"ids"`
		IDStrs  []string        `json:"id_strs"`
		Data    json.RawMessage `json:"data"`
		Code    int             `json:"code"`
		Message string          `json:"message"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	switch {
	case out.Code != 0 && out.Code != 200: // TinyID's error
		return nil, errors.New(out.Message)
	case out.Data != nil:
		var data []int64
		if err := json.Unmarshal(out.Data, &data); err != nil {
			var seg struct {
				CurrentID int64 `json:"currentId"`
			}
			json.Unmarshal(out.Data, &seg)
			return []string{strconv.FormatInt(seg.CurrentID+1, 10)}, nil
		}
		return decimal(data), nil
	case len(out.IDStrs) > 0:
		return out.IDStrs, nil
	case out.IDStr != "":
		return []string{out.IDStr}, nil
	case out.ID != nil:
		return []string{strconv.FormatInt(*out.ID, 10)}, nil
	}
	return decimal(out.IDs), nil
}

// Issue 42, item 5, end to end: two frond processes on one store, one
// configured forms: {order: mist} and one not (a rolling change, or one
// file forgotten), both serving their defaults. The node without the form
// used to hand out the plain counter, which walks through the Mist values
// the other gave (plain 129582 is Mist(1)); now both hand out the tag's
// Mist numbers, every one once. A node configured opaque62 for the tag
// refuses to start, and the mapping moves to plain only with its raise.
func TestE2E_MappingAcrossNodes(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite://" + filepath.Join(dir, "shared.db")
	t.Setenv("FROND_SEGMENT__FIXED_STEP", "true") // a node holds at most two segments of 20
	cfg := filepath.Join(dir, "mist.yaml")
	if err := os.WriteFile(cfg, []byte("forms:\n  order: mist\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := mustStart(t, t.TempDir(), "--store", db, "--node", "1", "--config", cfg)
	b := mustStart(t, t.TempDir(), "--store", db, "--node", "2")
	if code, body := a.req("POST", "/v1/tags", `{"name":"order","step":20}`); code != 201 || !strings.Contains(body, `"mapping":"mist"`) {
		t.Fatalf("create through the node configured mist: %d %s", code, body)
	}
	seen := map[int64]string{}
	for i := 0; i < 30; i++ {
		for _, n := range []struct {
			s    *server
			name string
		}{{a, "a"}, {b, "b"}} {
			id := n.s.id("/api/segment/get/order") // Leaf's API: the default form
			if id>>16 < 1 || id>>16 > 1000 {
				t.Fatalf("node %s handed out %d: not a Mist number", n.name, id)
			}
			if was, ok := seen[id]; ok {
				t.Fatalf("%d handed out by %s and by %s", id, was, n.name)
			}
			seen[id] = n.name
			for _, v := range n.s.batch("/v1/segment/order?n=3&form=number") {
				if _, ok := seen[v]; ok || v>>16 < 1 {
					t.Fatalf("node %s: form=number gave %d", n.name, v)
				}
				seen[v] = n.name
			}
		}
	}
	// A node whose configured form names another mapping does not start.
	opq := filepath.Join(dir, "opaque.yaml")
	os.WriteFile(opq, []byte("forms:\n  order: opaque62\nobfuscation:\n  key: an obfuscation key, long enough\n  scheme: ff1\n"), 0o644)
	if _, err := startServer(t, t.TempDir(), "--store", db, "--node", "3", "--config", opq); err == nil || !strings.Contains(err.Error(), "Forms[order]") {
		t.Fatalf("a node configured opaque62 for a Mist tag: %v", err)
	}
	// Mist to plain, through the node without the form: max_id moves past
	// every Mist number; both nodes then hand out plain numbers above them.
	var top int64
	for v := range seen {
		top = max(top, v)
	}
	code, body := b.req("PATCH", "/v1/tags/order", `{"mapping":"plain"}`)
	var changed struct {
		MaxID   int64 `json:"max_id"`
		Mapping string
	}
	if json.Unmarshal([]byte(body), &changed); code != 200 || changed.Mapping != "plain" || changed.MaxID <= top {
		t.Fatalf("PATCH mapping: %d %s", code, body)
	}
	// Every number the Mist mapping gave or can still give (the segments
	// nodes hold) is below the new max_id; the plain numbers start there.
	floor, plain := changed.MaxID, 0
	for i := 0; i < 60; i++ {
		id := b.id("/api/segment/get/order")
		if was, ok := seen[id]; ok {
			t.Fatalf("%d handed out by %s and by b after the change", id, was)
		}
		seen[id] = "b after"
		if id >= floor {
			plain++
		}
	}
	if plain < 20 {
		t.Fatalf("b handed out %d plain numbers in 60 after the change", plain)
	}
	// a, still configured mist, now refuses the tag rather than answer Mist
	// numbers of new segments (it serves those it holds, then refuses).
	for i := 0; ; i++ {
		code, body := a.get("/api/segment/get/order")
		if code != 200 {
			if !strings.Contains(body, "configured form") {
				t.Fatalf("a after the change: %d %s", code, body)
			}
			break
		}
		id, _ := strconv.ParseInt(body, 10, 64)
		if _, ok := seen[id]; ok || id >= floor {
			t.Fatalf("a handed out %d after the change (plain numbers from %d)", id, floor)
		}
		seen[id] = "a after"
		if i > 100 {
			t.Fatalf("a still answers after 100 requests: %s", body)
		}
	}
}
