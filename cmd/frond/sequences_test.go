package main

import (
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
