package frond_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every Go snippet of the README and docs/ is code that compiles (issue 44,
// item 6: the README's segment snippet did not, and never created the tag
// it asked for). A snippet is the body, word for word, of an example or a
// test somewhere in the repository (the root module's, a contrib module's,
// examples/), which its package's tests compile and, where they can, run.
// Its lines must stand in one Go file in the same order, contiguous; an
// import block at its top needs only each import in that file. A snippet
// that is not Go code (the output of a command) is not a go block.
func TestDocs_GoSnippetsAreCode(t *testing.T) {
	type source struct {
		path  string
		lines []string
	}
	var sources []source
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir // not compiled by go test
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources = append(sources, source{path, codeLines(string(b))})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob("docs/*.md")
	more, _ := filepath.Glob("docs/*/*.md")
	docs = append(append([]string{"README.md"}, docs...), more...)
	block := regexp.MustCompile("(?ms)^```go\n(.*?)^```")
	imports := regexp.MustCompile(`(?s)\Aimport \((.*?)\)\n`)
	n := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllStringSubmatchIndex(string(b), -1) {
			n++
			snippet := string(b)[m[2]:m[3]]
			line := strings.Count(string(b)[:m[0]], "\n") + 1
			var want []string
			if im := imports.FindStringSubmatch(snippet); im != nil {
				want = codeLines(im[1])
				snippet = snippet[len(im[0]):]
			}
			code := codeLines(snippet)
			found := ""
			for _, s := range sources {
				if contains(s.lines, code) && containsAll(s.lines, want) {
					found = s.path
					break
				}
			}
			if found == "" {
				t.Errorf("%s:%d: this Go snippet is in no Go file of the repository: make it the body of an example or a test, word for word\n%s", doc, line, snippet)
			}
		}
	}
	if n < 10 {
		t.Fatalf("found %d Go snippets in the README and docs/", n)
	}
}

// codeLines are the lines of Go code without empty ones, each with its
// runs of spaces and tabs as one space (gofmt aligns the comments of a
// block by the block's longest line; a snippet may be aligned otherwise).
func codeLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// contains reports whether sub stands in lines, contiguous.
func contains(lines, sub []string) bool {
	for i := 0; i+len(sub) <= len(lines); i++ {
		j := 0
		for j < len(sub) && lines[i+j] == sub[j] {
			j++
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

// containsAll reports whether every one of want is a line of lines.
func containsAll(lines, want []string) bool {
	for _, w := range want {
		found := false
		for _, l := range lines {
			if l == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
