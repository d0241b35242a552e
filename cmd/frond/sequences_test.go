package main

import (
	"strings"
	"testing"

	"github.com/frond-id/frond/config"
)

// Which store keeps the keyed sequence spaces: sequences.store, else the
// node's store when it can, else none.
func TestSequencesStore(t *testing.T) {
	for _, c := range []struct{ seq, store, want string }{
		{"", "sqlite:///var/lib/frond/frond.db", "sqlite:///var/lib/frond/frond.db"},
		{"", "mysql://u@db/frond", "mysql://u@db/frond"},
		{"", "redis://r:6379/0", "redis://r:6379/0"},
		{"", "etcd://e:2379", "etcd://e:2379"},
		{"", "memory:", "memory:"},
		{"", "mysql://a/f postgres://b/f", ""}, // a set of stores: name one
		{"", "cosid+mysql://a/f", ""},
		{"off", "sqlite:///x.db", ""},
		{"postgres://p/seq", "redis://r:6379/0", "postgres://p/seq"},
	} {
		got, err := sequencesStore(&config.Config{Store: c.store, Sequences: config.Sequences{Store: c.seq}})
		if err != nil || got != c.want {
			t.Errorf("sequences.store %q, store %q: %q, %v; want %q", c.seq, c.store, got, err, c.want)
		}
	}
	if _, err := sequencesStore(&config.Config{Sequences: config.Sequences{Store: "http://x"}}); err == nil {
		t.Error("sequences.store http://x accepted")
	}
}

// The scheme of sequences.store is checked against the one table of
// backends where the configuration is loaded (checkBackends), as the
// store's and the registry's are: a scheme that keeps no keyed sequences
// is refused naming the key and the schemes that do.
func TestCheckBackends_SequencesStore(t *testing.T) {
	for _, bad := range []string{"http://x", "zk://z:2181", "cosid+mysql://a/f", "file"} {
		cfg := &config.Config{Registry: "file", Sequences: config.Sequences{Store: bad}}
		err := checkBackends(cfg)
		if err == nil || !strings.Contains(err.Error(), "sequences.store") || !strings.Contains(err.Error(), "etcd") {
			t.Errorf("sequences.store %q: %v", bad, err)
		}
	}
	for _, good := range []string{"off", "", "redis://r:6379/0", "etcd://e:2379", "memory:", "postgres://p/seq"} {
		if err := checkBackends(&config.Config{Registry: "file", Sequences: config.Sequences{Store: good}}); err != nil {
			t.Errorf("sequences.store %q: %v", good, err)
		}
	}
}
