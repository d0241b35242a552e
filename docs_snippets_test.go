package frond_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every Go, Java and JavaScript snippet of the README, docs/ and the
// clients' READMEs is code that compiles (issue 44, item 6: the README's
// segment snippet did not, and never created the tag it asked for). A
// snippet is the body, word for word, of an example or a test somewhere in
// the repository (the root module's, a contrib module's, examples/, the
// clients' tests), which their tests compile and, where they can, run. Its
// lines must stand in one file of its language in the same order,
// contiguous; an import block at the top of a Go snippet needs only each
// import in that file, and so do the import lines at the top of a Java or
// JavaScript snippet. A block that is not code (a command's output) is
// not a go, java or js block; one that needs what the repository cannot
// build (Spring) says so after its language ("java spring") and is not
// checked.
func TestDocs_GoSnippetsAreCode(t *testing.T) {
	type source struct {
		path  string
		lines []string
	}
	langs := map[string][]string{"go": {".go"}, "java": {".java"}, "js": {".mjs", ".ts"}}
	var sources []source
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" || d.Name() == "dist" || d.Name() == "build") {
			return filepath.SkipDir // not compiled by the tests
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".go" || ext == ".java" || ext == ".mjs" || ext == ".ts") {
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
	clients, _ := filepath.Glob("clients/*/README.md")
	docs = append(append(append([]string{"README.md"}, docs...), more...), clients...)
	block := regexp.MustCompile("(?ms)^```(go|java|js)\n(.*?)^```")
	imports := regexp.MustCompile(`(?s)\Aimport \((.*?)\)\n`)
	n := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllStringSubmatchIndex(string(b), -1) {
			n++
			lang, snippet := string(b)[m[2]:m[3]], string(b)[m[4]:m[5]]
			line := strings.Count(string(b)[:m[0]], "\n") + 1
			var want []string
			if im := imports.FindStringSubmatch(snippet); im != nil {
				want = codeLines(im[1])
				snippet = snippet[len(im[0]):]
			}
			code := codeLines(snippet)
			for len(code) > 0 && lang != "go" && strings.HasPrefix(code[0], "import ") {
				want, code = append(want, code[0]), code[1:] // Java's and JavaScript's imports: in the file, anywhere
			}
			found := ""
			for _, s := range sources {
				if !slices.Contains(langs[lang], filepath.Ext(s.path)) {
					continue
				}
				if contains(s.lines, code) && containsAll(s.lines, want) {
					found = s.path
					break
				}
			}
			if found == "" {
				t.Errorf("%s:%d: this %s snippet is in no %s file of the repository: make it the body of an example or a test, word for word\n%s", doc, line, lang, strings.Join(langs[lang], " or "), snippet)
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
