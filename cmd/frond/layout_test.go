package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/sqlregistry"
	"github.com/frond-id/frond/snowflake"
)

// Issue 42, item 6: a worker registry records the snowflake layout of the
// first node, and frond serve with another layout (here: datacenter bits
// forgotten in one node's file) is refused at start, naming both.
func TestCLI_ServeRefusesAnotherLayout(t *testing.T) {
	dir := t.TempDir()
	reg := "sqlite://" + filepath.Join(dir, "registry.db")
	split, err := snowflake.Preset("twitter")
	if err != nil {
		t.Fatal(err)
	}
	split.DatacenterBits = 5
	p, err := sqlregistry.Open(reg, registry.Options{Host: "10.0.0.1", Port: 1, Layout: split.Fingerprint(), Datacenter: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Acquire(context.Background(), split.MaxWorker()); err != nil {
		t.Fatal(err)
	}
	p.Close()
	code, _, errs := runCLI(t, nil, "serve", "--data-dir", filepath.Join(dir, "node"), "--registry", reg, "--http-addr", "127.0.0.1:0")
	plain, _ := snowflake.Preset("twitter")
	if code == exitOK || !strings.Contains(errs, split.Fingerprint()) || !strings.Contains(errs, plain.Fingerprint()) {
		t.Fatalf("serve with another layout: exit %d\n%s", code, errs)
	}
}
