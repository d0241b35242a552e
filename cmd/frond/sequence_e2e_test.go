package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A sequence tag through the binary: created with frond tag create --mode
// sequence on one node, its IDs asked for one request after another from
// two processes sharing one SQLite file follow each other with no gap, over
// HTTP and the CLI.
func TestE2E_SequenceTag(t *testing.T) {
	db := "sqlite://" + filepath.Join(t.TempDir(), "shared.db")
	a := mustStart(t, t.TempDir(), "--store", db, "--node", "1", "--admin-token", "tok")
	b := mustStart(t, t.TempDir(), "--store", db, "--node", "2", "--admin-token", "tok")
	out, err := exec.Command(binary, "tag", "create", "ticket", "--step", "1", "--mode", "sequence", "--server", a.url, "--token", "tok").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "sequence") {
		t.Fatalf("frond tag create --mode sequence: %v\n%s", err, out)
	}
	want := int64(1)
	for i := range 20 {
		s := []*server{a, b}[i%2]
		code, body := s.get("/v1/segment/ticket")
		var got struct{ ID int64 }
		json.Unmarshal([]byte(body), &got)
		if code != 200 || got.ID != want {
			t.Fatalf("request %d: %d %s, want ID %d", i, code, body, want)
		}
		want++
	}
	out, err = exec.Command(binary, "id", "segment", "ticket", "-n", "3", "--server", b.url).CombinedOutput()
	if err != nil || strings.Join(strings.Fields(string(out)), " ") != "21 22 23" {
		t.Fatalf("frond id segment: %v %q", err, out)
	}
	out, err = exec.Command(binary, "tag", "get", "ticket", "--server", b.url, "--token", "tok").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "sequence") || !strings.Contains(string(out), strconv.Itoa(24)) {
		t.Fatalf("frond tag get: %v\n%s", err, out)
	}
	if out, err := exec.Command(binary, "tag", "create", "x", "--step", "1", "--mode", "stream", "--server", a.url, "--token", "tok").CombinedOutput(); err == nil {
		t.Fatalf("an unknown mode was accepted: %s", out)
	}
}
