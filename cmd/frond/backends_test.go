package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/frond-id/frond/config"
)

// A scheme is read as url.Parse reads it, in any case; a store from the
// memory backend warns whichever command opens it.
func TestBackends_Lookup(t *testing.T) {
	for _, raw := range []string{"MYSQL://u:p@h:3306/ids", "Redis://h:6379/0", "sqlite:///tmp/x.db", "memory://"} {
		if _, err := storeBackend(raw); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
	for _, raw := range []string{"memory", "file", "static:3", "zk://h:2181", "bogus://x"} {
		if _, err := storeBackend(raw); err == nil {
			t.Errorf("%s taken as a store", raw)
		}
	}
	var logs bytes.Buffer
	s, err := openStoreNow(context.Background(), "memory://", slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !strings.Contains(logs.String(), "MEMORY STORE") {
		t.Fatalf("no warning for the memory store: %q", logs.String())
	}
}

// storeName masks a password holding a Unicode space, keeps a list whole,
// and makes only a sqlite:// path absolute.
func TestStoreName(t *testing.T) {
	for raw, leak := range map[string]string{
		"mysql://\u3000:000@h:3306/db":               ":000@",
		"mysql://u:s3cr\u3000et@h/db mysql://v:w@h2": "s3cr",
	} {
		if got := storeName(raw); strings.Contains(got, leak) {
			t.Errorf("storeName(%q) = %q", raw, got)
		}
	}
	if got := storeName("sqlite:rel.db"); got != "sqlite:rel.db" {
		t.Errorf("storeName(sqlite:rel.db) = %q", got)
	}
	if got := storeName("sqlite://rel.db"); !strings.HasPrefix(got, "sqlite:///") {
		t.Errorf("storeName(sqlite://rel.db) = %q", got)
	}
}

// A node says once what its configuration means for a second node: the
// defaults are one node's only; a shared store with the file registry's
// default worker ID 0 repeats snowflake IDs on a second such node.
func TestTopologyWarnings(t *testing.T) {
	for _, tc := range []struct {
		store, registry string
		node            int64
		want            string // a part of the one warning, or "" for none
	}{
		{"", "", 0, "SINGLE NODE"},
		{"sqlite:///var/lib/frond/ids.db", "file", 3, "nodes on this machine may share it"},
		{"sqlite:///var/lib/frond/ids.db", "file", 0, "SINGLE NODE"},
		{"memory://", "", 0, "SINGLE NODE"},
		{"mysql://u@db:3306/ids", "", 0, "worker ID is 0"},
		{"sqlite:///a.db postgres://db/ids", "", 0, "worker ID is 0"},
		{"mysql://u@db:3306/ids", "", 2, ""},
		{"mysql://u@db:3306/ids", "etcd://e:2379", 0, ""},
		{"", "zk://z:2181", 0, ""},
		{"", "static:a=1,b=2", 0, ""},
	} {
		cfg := &config.Config{Store: tc.store, Registry: tc.registry, Node: tc.node}
		got := topologyWarnings(cfg)
		switch {
		case tc.want == "" && len(got) != 0, tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("store %q, registry %q, node %d: %q, want %q", tc.store, tc.registry, tc.node, got, tc.want)
		}
	}
}
