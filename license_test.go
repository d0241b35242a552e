package frond_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// Issue 60: frond has a licence, Apache-2.0 as Leaf's, CosId's and
// TypeID's, and every package of it names it: the repository's LICENSE
// (the Go modules), the npm package, the Java pom and jar, the release
// archives, the README.
func TestLicense(t *testing.T) {
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	lic := read("LICENSE")
	if !strings.Contains(lic, "Apache License") || !strings.Contains(lic, "Version 2.0, January 2004") || !strings.Contains(lic, "END OF TERMS AND CONDITIONS") {
		t.Fatal("LICENSE is not the Apache License 2.0's text")
	}
	// A module's zip holds its own directory only: each module of the
	// repository carries the text.
	for _, m := range []string{"contrib/gorm", "contrib/ent", "clients/python"} {
		if read(m+"/LICENSE") != lic {
			t.Errorf("%s/LICENSE is not the repository's", m)
		}
	}
	var pkg struct {
		License string
		Files   []string
		Scripts map[string]string
	}
	if err := json.Unmarshal([]byte(read("clients/typescript/package.json")), &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.License != "Apache-2.0" || !strings.Contains(pkg.Scripts["prepack"], "LICENSE") {
		t.Fatalf("package.json: license %q, prepack %q", pkg.License, pkg.Scripts["prepack"])
	}
	for path, want := range map[string]string{
		"clients/java/pom.xml":  "<name>Apache License, Version 2.0</name>",
		"clients/java/build.sh": "META-INF/LICENSE",
		"scripts/release.sh":    "cp README.md CHANGELOG.md LICENSE",
		"README.md":             "Apache License, Version 2.0 ([LICENSE](LICENSE))",
	} {
		if !strings.Contains(read(path), want) {
			t.Errorf("%s does not name the licence (%q)", path, want)
		}
	}
}
