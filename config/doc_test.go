package config

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md's table of keys from the declarations")

// docs/configuration.md's table of keys is the declarations' (decl.go): a
// key added, a default or a meaning changed there and not in the
// documentation fails here. go test ./config -run TestDocTable
// -update rewrites the table.
func TestDocTable(t *testing.T) {
	const path = "../docs/configuration.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "| key | flag | default | meaning |\n")
	if start < 0 {
		t.Fatal("docs/configuration.md has no table of keys")
	}
	end := strings.Index(doc[start:], "\n\n")
	if end < 0 {
		t.Fatal("the table of keys does not end")
	}
	end += start + 1
	want := DocTable()
	if doc[start:end] == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc[:start]+want+doc[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got := strings.Split(doc[start:end], "\n")
	for i, line := range strings.Split(want, "\n") {
		if i >= len(got) || got[i] != line {
			t.Fatalf("docs/configuration.md's table of keys differs from the declarations at row %d:\n  doc:  %s\n  decl: %s\n(go test ./config -run TestDocTable -update rewrites it)", i, at(got, i), line)
		}
	}
	t.Fatal("docs/configuration.md's table of keys has rows the declarations lack")
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(none)"
}

// Every key of Config (its koanf tags) is declared once: a field added
// without a declaration would have no default, flag or documentation.
func TestDeclarations_Complete(t *testing.T) {
	declared := map[string]int{}
	for _, d := range (&Config{}).declarations() {
		declared[d.key]++
	}
	for _, info := range keyInfos() {
		key := strings.Join(info.pattern, ".")
		if i := strings.Index(key, ".*"); i >= 0 {
			key = key[:i] // a section of named entries is declared as a whole
		}
		if declared[key] == 0 {
			t.Errorf("key %s has no declaration in decl.go", key)
		}
	}
	for key, n := range declared {
		if n > 1 {
			t.Errorf("key %s is declared %d times", key, n)
		}
	}
}
