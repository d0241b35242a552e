// Command modproxy writes a release of frond's Go modules into a directory
// in the layout of a module proxy, which GOPROXY=file://DIR reads: for each
// module, DIR/<module path>/@v/list, VERSION.info, VERSION.mod and
// VERSION.zip. scripts/release.sh --proxy runs it; CI then resolves the
// release from there, as `go get` resolves it from proxy.golang.org once the
// tags are pushed.
//
//	go run ./scripts/modproxy -dir DIR -version VERSION -revision REV MODULE_DIR...
//
// Each module's zip is made from the git revision (golang.org/x/mod/zip:
// the files the go command itself would take from the tag, without
// untracked files, nested modules or vendor directories), so it holds what a
// consumer will get; its .mod is the go.mod of that revision.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

func main() {
	dir := flag.String("dir", "", "the proxy directory to write into (created if missing)")
	version := flag.String("version", "", "the version of every module (v1.2.3 or v1.2.3-rc.1)")
	revision := flag.String("revision", "HEAD", "the git revision the modules are taken from")
	flag.Parse()
	if err := run(*dir, *version, *revision, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

func run(dir, version, revision string, modules []string) error {
	if dir == "" || len(modules) == 0 {
		return errors.New("usage: modproxy -dir DIR -version VERSION [-revision REV] MODULE_DIR...")
	}
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return fmt.Errorf("version %q: want v1.2.3 or v1.2.3-rc.1", version)
	}
	root, err := git("", "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	when, err := git(root, "log", "-1", "--format=%cI", revision)
	if err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339, when)
	if err != nil {
		return fmt.Errorf("commit time %q: %w", when, err)
	}
	for _, m := range modules {
		if err := write(dir, root, revision, filepath.ToSlash(filepath.Clean(m)), version, t.UTC()); err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
	}
	return nil
}

// write writes the module in subdir of the repository at root, at revision,
// into the proxy directory dir as version.
func write(dir, root, revision, subdir, version string, t time.Time) error {
	if subdir == "." {
		subdir = ""
	}
	gomod, err := git(root, "show", revision+":"+filepath.ToSlash(filepath.Join(subdir, "go.mod")))
	if err != nil {
		return err
	}
	f, err := modfile.ParseLax("go.mod", []byte(gomod), nil)
	if err != nil || f.Module == nil {
		return fmt.Errorf("go.mod at %s: no module path (%v)", revision, err)
	}
	path := f.Module.Mod.Path
	m := module.Version{Path: path, Version: version}
	escaped, err := module.EscapePath(path)
	if err != nil {
		return err
	}
	at := filepath.Join(dir, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	var zip bytes.Buffer
	if err := modzip.CreateFromVCS(&zip, m, root, revision, subdir); err != nil {
		return err
	}
	info, _ := json.Marshal(struct{ Version, Time string }{version, t.Format(time.RFC3339)})
	for name, data := range map[string][]byte{
		version + ".zip":  zip.Bytes(),
		version + ".mod":  []byte(gomod + "\n"),
		version + ".info": info,
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			return err
		}
	}
	list := filepath.Join(at, "list")
	old, err := os.ReadFile(list)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(old))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	semver.Sort(versions)
	if err := os.WriteFile(list, []byte(strings.Join(versions, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Printf("modproxy: %s@%s (%d bytes) in %s\n", path, version, zip.Len(), dir)
	return nil
}

// git runs git in dir and returns its output, trimmed.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimRight(string(out), "\n"), nil
}
