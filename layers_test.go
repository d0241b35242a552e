package frond_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/frond-id/frond"

// layers reads docs/development.md's table of floors: folder -> floor.
func layers(t *testing.T) map[string]int {
	t.Helper()
	f, err := os.Open("docs/development.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| (\\d+) \\| (.+?) \\| ")
	name := regexp.MustCompile("`([^`]+)`")
	out := map[string]int{}
	in := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Layers"
			continue
		}
		m := row.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		floor, _ := strconv.Atoi(m[1])
		for _, n := range name.FindAllStringSubmatch(m[2], -1) {
			out[n[1]] = floor
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/development.md has no table of floors under ## Layers")
	}
	return out
}

// floorOf is the floor of a package: its longest folder in the table.
func floorOf(table map[string]int, pkg string) (string, int, bool) {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	if rel == "" {
		rel = "."
	}
	for dir := rel; ; {
		if f, ok := table[dir]; ok {
			return dir, f, true
		}
		i := strings.LastIndex(dir, "/")
		if i < 0 {
			return "", 0, false
		}
		dir = dir[:i]
	}
}

// check reads go list's lines (a package, then its imports) against the
// table: the imports that point up, the packages it does not place, and
// how many it placed.
func check(table map[string]int, golist string) (up, unplaced []string, placed int) {
	for _, line := range strings.Split(strings.TrimSpace(golist), "\n") {
		f := strings.Fields(line)
		dir, floor, ok := floorOf(table, f[0])
		if !ok {
			unplaced = append(unplaced, f[0])
			continue
		}
		placed++
		for _, imp := range f[1:] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if idir, ifloor, ok := floorOf(table, imp); ok && ifloor > floor {
				up = append(up, fmt.Sprintf("%s (%s, floor %d) imports %s (%s, floor %d)", f[0], dir, floor, imp, idir, ifloor))
			}
		}
	}
	return up, unplaced, placed
}

// Issue 62: every import points down. Each package of the module (its
// non-test imports) imports only packages on its own floor or below, as
// docs/development.md's table places them, and the table places every
// package; so the layers cannot slip again unseen.
func TestLayers_ImportsPointDown(t *testing.T) {
	table := layers(t)
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	up, unplaced, placed := check(table, string(out))
	for _, u := range up {
		t.Errorf("an import that points up: %s", u)
	}
	for _, p := range unplaced {
		t.Errorf("%s is in no folder of docs/development.md's table of floors", p)
	}
	if placed < 40 {
		t.Fatalf("only %d packages placed: go list found too few", placed)
	}
}

// The check finds an import that points up and a package the table does
// not place; the longest folder decides a package's floor.
func TestLayers_FindsAnImportUp(t *testing.T) {
	table := layers(t)
	table["service"] = 3 // below worker (4), which it imports
	golist := module + "/service " + module + "/worker " + module + "/segment fmt\n" +
		module + "/client/clienttest " + module + "/api/grpc\n" + module + "/nowhere/x " + module
	up, unplaced, placed := check(table, golist)
	if len(up) != 1 || !strings.Contains(up[0], "imports "+module+"/worker (worker, floor 4)") {
		t.Fatalf("up: %q", up)
	}
	if len(unplaced) != 1 || unplaced[0] != module+"/nowhere/x" || placed != 2 {
		t.Fatalf("unplaced %q, placed %d", unplaced, placed)
	}
}

// maxCommandLogic is how many lines of logic (neither blank nor comment) a
// file of the binary's folder may hold: a command file parses its flags,
// calls a package and prints; logic that grows past it belongs in a package
// with tests of its own (as the audit's did: package audit).
const maxCommandLogic = 300

// The binary's files hold commands, not logic.
func TestLayers_CommandFilesSmall(t *testing.T) {
	files, err := filepath.Glob("cmd/frond/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no command files: %v", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := logicLines(string(b)); n > maxCommandLogic {
			t.Errorf("%s: %d lines of logic, at most %d: move what it computes into a package (docs/development.md, Layers)", f, n, maxCommandLogic)
		}
	}
}

// logicLines counts the lines of src that are neither blank nor a comment.
func logicLines(src string) int {
	n := 0
	for _, line := range strings.Split(src, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "//") {
			n++
		}
	}
	return n
}

func TestLogicLines(t *testing.T) {
	if n := logicLines("package x\n\n// doc\n  // more\nfunc f() {\n\treturn\n}\n"); n != 4 {
		t.Fatalf("%d, want 4", n)
	}
}
