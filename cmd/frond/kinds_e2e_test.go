package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/frond-id/frond/idfmt"
)

// UUIDs, serial numbers and opaque forms through the binary, configured from
// a YAML file, and the admin reveal of an opaque ID.
func TestE2E_Kinds(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	os.WriteFile(keyFile, []byte("an obfuscation key, long enough\n"), 0o600)
	oldKey := "last year's key, long enough"
	cfg := filepath.Join(dir, "frond.yaml")
	os.WriteFile(cfg, []byte(`obfuscation:
  key_file: `+keyFile+`
  scheme: ff1
  key_version: 2
  previous:
    1: {scheme: splitmix, key: "`+oldKey+`"}
serials:
  pay:
    template: "PAY{time:yyyyMMddHHmmssSSS}{seq:6}"
    reset: day
  ord:
    template: "ORD{time:yyyyMMddHHmmssSSS}{node:4}{seq:4}"
    source: snowflake
forms:
  order: opaque62
prefixes:
  order: ord
`), 0o644)
	s := mustStart(t, filepath.Join(dir, "data"), "--config", cfg, "--admin-token", "tok")
	run := func(args ...string) []string {
		t.Helper()
		cmd := exec.Command(binary, append(args, "--server", s.url, "--token", "tok")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("frond %v: %v\n%s", args, err, out)
		}
		return strings.Fields(string(out))
	}
	if out := run("id", "uuid", "--version", "7", "-n", "5"); len(out) != 5 || !slices.IsSorted(out) || out[0][14] != '7' {
		t.Fatalf("uuids %v", out)
	}
	if out := run("id", "uuid", "-n", "2"); len(out) != 2 || out[0][14] != '4' || out[0] == out[1] {
		t.Fatalf("uuids %v", out)
	}
	pay := run("id", "serial", "pay", "-n", "3")
	if len(pay) != 3 || !strings.HasPrefix(pay[0], "PAY") || !strings.HasSuffix(pay[0], "000001") || !strings.HasSuffix(pay[2], "000003") {
		t.Fatalf("pay serials %v", pay)
	}
	if ord := run("id", "serial", "ord", "-n", "3"); len(ord) != 3 || ord[0] == ord[1] || !strings.HasPrefix(ord[0], "ORD") || len(ord[0]) != 3+17+4+4 {
		t.Fatalf("ord serials %v", ord)
	}
	run("tag", "create", "order", "--step", "100")
	opaque := run("id", "segment", "order", "-n", "3")
	for i, v := range opaque {
		if got := run("reveal", v, "--form", "opaque62"); len(got) != 1 || got[0] != []string{"1", "2", "3"}[i] {
			t.Fatalf("reveal %s: %v", v, got)
		}
	}
	// base62 encodes the tag's number (opaque, its mapping), with its prefix.
	b62 := run("id", "segment", "order", "--form", "base62")
	if len(b62) != 1 || len(b62[0]) != 15 || !strings.HasPrefix(b62[0], "ord_") || b62[0] == "ord_00000000004" {
		t.Fatalf("base62 %v", b62)
	}
	if num := run("reveal", b62[0], "--form", "base62"); len(num) != 1 || run("reveal", num[0], "--form", "opaque")[0] != "4" {
		t.Fatalf("base62 %v is %v", b62, num)
	}
	// Key rotation: an opaque ID the previous key (version 1) gave is
	// revealed with its version; the current key's with or without it.
	ff1, _ := idfmt.NewPermutation(idfmt.SchemeFF1, []byte("an obfuscation key, long enough"), 63)
	old, _ := idfmt.NewPermutation(idfmt.SchemeSplitmix, []byte(oldKey), 63)
	cur, _ := ff1.Apply(77)
	prev, _ := old.Apply(77)
	for _, c := range [][]string{
		{strconv.FormatInt(cur, 10)}, {strconv.FormatInt(cur, 10), "--key-version", "2"}, {strconv.FormatInt(prev, 10), "--key-version", "1"},
	} {
		if got := run(append([]string{"reveal", "--form", "opaque"}, c...)...); len(got) != 1 || got[0] != "77" {
			t.Fatalf("reveal %v: %v", c, got)
		}
	}
	if got := run("id", "segment", "order", "--form", "opaque"); len(got) != 1 || got[0] != mustApply(t, ff1, 5) {
		t.Fatalf("opaque ID 5 under the current key: %v", got)
	}

	// The schemes of issue 33 from the command line.
	if got := run("id", "uuid", "--version", "5", "--namespace", "dns", "--name", "example.com"); len(got) != 1 || got[0] != "cfbff0d1-9375-5685-968c-48ce8b15ae17" {
		t.Fatalf("uuid v5: %v", got)
	}
	tid := run("id", "uuid", "--version", "7", "--form", "typeid", "--prefix", "user")
	if len(tid) != 1 || !strings.HasPrefix(tid[0], "user_") {
		t.Fatalf("typeid: %v", tid)
	}
	if got := run("reveal", tid[0], "--kind", "uuid", "--form", "typeid", "--prefix", "user"); len(got) != 1 || len(got[0]) != 36 || got[0][14] != '7' {
		t.Fatalf("reveal typeid: %v", got)
	}
	fr := run("id", "snowflake", "--form", "friendly")
	if len(fr) != 1 || strings.Count(fr[0], "-") != 2 {
		t.Fatalf("friendly: %v", fr)
	}
	offline := func(args ...string) []string {
		t.Helper()
		out, err := exec.Command(binary, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("frond %v: %v\n%s", args, err, out)
		}
		return strings.Fields(string(out))
	}
	id := run("reveal", fr[0], "--kind", "snowflake", "--form", "friendly")
	if dec := offline("decode", id[0]); !slices.Contains(dec, strings.Split(fr[0], "-")[1]) {
		t.Fatalf("friendly %s -> %v -> %v", fr[0], id, dec)
	}
	// The tag's configured prefix on its opaque62 IDs, checked on reveal.
	pre := run("id", "segment", "order")
	if len(pre) != 1 || !strings.HasPrefix(pre[0], "ord_") {
		t.Fatalf("prefixed: %v", pre)
	}
	if got := run("reveal", pre[0], "--tag", "order"); len(got) != 1 || got[0] != "6" {
		t.Fatalf("reveal %s: %v", pre[0], got)
	}
	// Mist is a mapping of the tag's own: a tag created with it hands out
	// Mist numbers; another tag refuses the form (another mapping).
	run("tag", "create", "invite", "--step", "100", "--mapping", "mist")
	if m := run("id", "segment", "invite"); len(m) != 1 {
		t.Fatalf("mist: %v", m)
	} else if v, _ := strconv.ParseInt(m[0], 10, 64); v>>16 != 1 {
		t.Fatalf("mist %s: counter %d", m[0], v>>16)
	}
	for _, bad := range [][]string{{"id", "uuid", "--version", "5", "--namespace", "dns"}, {"id", "uuid", "--version", "2"},
		{"id", "segment", "order", "--form", "mist"}, {"id", "segment", "invite", "--form", "opaque"},
		{"id", "segment", "order", "--form", "base62", "--prefix", "Ord"}} {
		cmd := exec.Command(binary, append(bad, "--server", s.url)...)
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("frond %v: %s", bad, out)
		}
	}
	if dec := offline("decode", "1861083629105360902", "--datacenter-bits", "5"); !slices.Contains(dec, "datacenter") || !slices.Contains(dec, "worker") {
		t.Fatalf("decode --datacenter-bits: %v", dec)
	}
}

func mustApply(t *testing.T, p *idfmt.Permutation, x int64) string {
	t.Helper()
	y, err := p.Apply(x)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatInt(y, 10)
}
