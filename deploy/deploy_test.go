package deploy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond/config"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/knadh/koanf/parsers/yaml"
)

// The repository root, seen from this package's directory.
const repo = ".."

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// loadConfig validates a FROND_* environment the way frond serve does at
// start, without starting anything. Files it names must exist.
func loadConfig(environ []string) (*config.Config, error) {
	cfg, _, err := config.Load(nil, environ)
	return cfg, err
}

// defaultShutdown is shutdown_timeout's default.
func defaultShutdown() time.Duration {
	d, err := time.ParseDuration(fmt.Sprint(config.Defaults()["shutdown_timeout"]))
	if err != nil {
		panic(err)
	}
	return d
}

// tokenFile writes an admin token file for loadConfig.
func tokenFile(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(f, []byte("test-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func problemsOf(t *testing.T, errs []error) {
	t.Helper()
	for _, err := range errs {
		t.Error(err)
	}
}

func wantProblem(t *testing.T, errs []error, want string) {
	t.Helper()
	for _, err := range errs {
		if strings.Contains(err.Error(), want) {
			return
		}
	}
	t.Errorf("want a problem with %q; got %v", want, errs)
}

// ---- Dockerfile ----

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case
	args string
}

// parseDockerfile splits a Dockerfile into instructions: comments (parser
// directives too) and blank lines dropped, lines ending in \ joined.
func parseDockerfile(src string) []instruction {
	var out []instruction
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(strings.NewReader(src))
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if cur.Len() == 0 {
			start = n
		} else {
			cur.WriteByte(' ')
		}
		if s, ok := strings.CutSuffix(t, `\`); ok {
			cur.WriteString(strings.TrimSpace(s))
			continue
		}
		cur.WriteString(t)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// flags splits leading --name=value options off an instruction's arguments.
func flags(args string) (map[string]string, string) {
	f := map[string]string{}
	for strings.HasPrefix(args, "--") {
		opt, rest, _ := strings.Cut(args, " ")
		k, v, _ := strings.Cut(strings.TrimPrefix(opt, "--"), "=")
		f[k] = v
		args = strings.TrimSpace(rest)
	}
	return f, args
}

// stage is one FROM and what follows it.
type stage struct {
	image, name string
	instrs      []instruction
}

func stages(instrs []instruction) []stage {
	var out []stage
	for _, in := range instrs {
		if in.cmd == "FROM" {
			_, rest := flags(in.args)
			f := strings.Fields(rest)
			s := stage{image: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			out = append(out, s)
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].instrs = append(out[len(out)-1].instrs, in)
		}
	}
	return out
}

// keyValues parses ENV and LABEL arguments: k=v pairs (values may be
// quoted), or the old "ENV k v" form.
func keyValues(args string) map[string]string {
	kv := map[string]string{}
	if !strings.Contains(strings.Fields(args)[0], "=") {
		k, v, _ := strings.Cut(args, " ")
		kv[k] = strings.TrimSpace(v)
		return kv
	}
	for args = strings.TrimSpace(args); args != ""; args = strings.TrimSpace(args) {
		k, rest, _ := strings.Cut(args, "=")
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := 1
			for end < len(rest) && (rest[end] != '"' || rest[end-1] == '\\') {
				end++
			}
			v, _ = strconv.Unquote(rest[:min(end+1, len(rest))])
			args = rest[min(end+1, len(rest)):]
		} else {
			v, args, _ = strings.Cut(rest, " ")
		}
		kv[k] = v
	}
	return kv
}

// execForm decodes a JSON array (exec form); nil if args is not one.
func execForm(args string) []string {
	var v []string
	if json.Unmarshal([]byte(args), &v) != nil {
		return nil
	}
	return v
}

var (
	goBuildImage = regexp.MustCompile(`^golang:(\d+)\.(\d+)\.(\d+)-bookworm(@sha256:[0-9a-f]{64})?$`)
	goDirective  = regexp.MustCompile(`(?m)^go (\d+)\.(\d+)(?:\.(\d+))?$`)
	numericUser  = regexp.MustCompile(`^(\d+)(?::(\d+))?$`)
	frondEnvVar  = regexp.MustCompile(`\bFROND_[A-Z_]+\b`)
)

// image is what the Dockerfile's final stage says about the image.
type image struct {
	env     map[string]string
	user    string
	volumes []string
	expose  []string
}

// checkDockerfile checks the Dockerfile's structure. goMod is go.mod,
// buildScript scripts/build.sh.
func checkDockerfile(src, goMod, buildScript string) (image, []error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	instrs := parseDockerfile(src)
	st := stages(instrs)
	var img image
	if len(st) < 2 {
		bad("want a multi-stage build (a build stage and a final stage); have %d FROM", len(st))
		return img, errs
	}
	names := map[string]bool{}
	for i, s := range st {
		switch {
		case names[s.image] || s.image == "scratch":
		case strings.Contains(s.image, "@sha256:"):
		case !strings.Contains(s.image, ":") || strings.HasSuffix(s.image, ":latest"):
			bad("stage %d: FROM %s: not pinned (want an exact version tag or a digest, not latest)", i+1, s.image)
		case i > 0 && !goBuildImage.MatchString(s.image):
			bad("stage %d: FROM %s: a tag of this image may float; pin its digest (@sha256:...)", i+1, s.image)
		}
		if s.name != "" {
			names[s.name] = true
		}
	}
	// The build stage: an exact Go release that go.mod accepts, running
	// scripts/build.sh with the values it reads.
	build := st[0]
	m := goBuildImage.FindStringSubmatch(build.image)
	if m == nil {
		bad("build stage: FROM %s: want golang:1.N.P-bookworm (an exact Go release), optionally @sha256:...", build.image)
	} else if g := goDirective.FindStringSubmatch(goMod); g == nil {
		bad("go.mod has no go directive")
	} else {
		v := func(s string) int { n, _ := strconv.Atoi(s); return n }
		if m[1] != g[1] || m[2] != g[2] || v(m[3]) < v(g[3]) {
			bad("build stage: Go %s.%s.%s does not match go.mod's go %s.%s.%s (same minor release, at least its patch)", m[1], m[2], m[3], g[1], g[2], g[3])
		}
	}
	if build.name == "" {
		bad("build stage: no name (FROM ... AS build)")
	}
	var buildOut string
	args := map[string]bool{}
	for _, in := range build.instrs {
		switch in.cmd {
		case "ARG":
			for _, a := range strings.Fields(in.args) {
				k, _, _ := strings.Cut(a, "=")
				args[k] = true
			}
		case "RUN":
			_, rest := flags(in.args)
			f := strings.Fields(rest)
			for i, w := range f {
				if strings.HasSuffix(w, "scripts/build.sh") && i+1 < len(f) {
					buildOut = f[i+1]
				}
			}
		}
	}
	if buildOut == "" {
		bad("build stage: no RUN of scripts/build.sh OUT")
	}
	wantArgs := slices.Compact(slices.Sorted(slices.Values(frondEnvVar.FindAllString(buildScript, -1))))
	if len(wantArgs) == 0 {
		bad("scripts/build.sh reads no FROND_* variable: the test expects FROND_VERSION, FROND_COMMIT, FROND_DATE")
	}
	for _, a := range wantArgs {
		if !args[a] {
			bad("build stage: no ARG %s (scripts/build.sh reads it; a build without .git needs it)", a)
		}
	}
	for _, in := range instrs {
		if in.cmd == "ADD" && (strings.Contains(in.args, "://") || strings.Contains(in.args, "git@")) {
			bad("line %d: ADD of a URL: %s", in.line, in.args)
		}
	}

	// The final stage.
	final := st[len(st)-1]
	if final.image != "scratch" && !strings.HasPrefix(final.image, "gcr.io/distroless/static") {
		bad("final stage: FROM %s: want scratch or gcr.io/distroless/static", final.image)
	}
	img.env = map[string]string{}
	labels := map[string]string{}
	var entrypoint, cmd, health []string
	var copies []instruction
	for _, in := range final.instrs {
		switch in.cmd {
		case "ENV":
			for k, v := range keyValues(in.args) {
				img.env[k] = v
			}
		case "LABEL":
			for k, v := range keyValues(in.args) {
				labels[k] = v
			}
		case "USER":
			img.user = in.args
		case "VOLUME":
			if v := execForm(in.args); v != nil {
				img.volumes = append(img.volumes, v...)
			} else {
				img.volumes = append(img.volumes, strings.Fields(in.args)...)
			}
		case "EXPOSE":
			img.expose = append(img.expose, strings.Fields(in.args)...)
		case "ENTRYPOINT":
			entrypoint = execForm(in.args)
		case "CMD":
			cmd = execForm(in.args)
		case "HEALTHCHECK":
			_, rest := flags(in.args)
			c, ok := strings.CutPrefix(rest, "CMD ")
			health = execForm(strings.TrimSpace(c))
			if !ok || health == nil {
				bad("HEALTHCHECK %s: want CMD in exec form (the image has no shell)", in.args)
			}
		case "COPY":
			copies = append(copies, in)
		case "ADD":
			bad("final stage: ADD %s: use COPY", in.args)
		case "RUN":
			if final.image == "scratch" {
				bad("final stage: RUN in scratch: there is no shell")
			}
		}
	}
	u := numericUser.FindStringSubmatch(img.user)
	switch {
	case img.user == "":
		bad("final stage: no USER: the container would run as root")
	case u == nil:
		bad("final stage: USER %s: want a numeric uid:gid (a name needs /etc/passwd, and runAsNonRoot cannot check it)", img.user)
	case u[1] == "0" || u[2] == "0":
		bad("final stage: USER %s is root", img.user)
	}
	if !slices.Equal(entrypoint, []string{"/frond"}) {
		bad("final stage: ENTRYPOINT %q; want [\"/frond\"]", entrypoint)
	}
	if !slices.Equal(cmd, []string{"serve"}) {
		bad("final stage: CMD %q; want [\"serve\"]", cmd)
	}
	if len(health) < 2 || health[0] != "/frond" || health[1] != "health" {
		bad("final stage: HEALTHCHECK %q: want the binary itself, /frond health", health)
	}
	dataDir := img.env["FROND_DATA_DIR"]
	switch {
	case dataDir == "":
		bad("final stage: no ENV FROND_DATA_DIR")
	case !slices.Contains(img.volumes, dataDir):
		bad("final stage: FROND_DATA_DIR %s is no VOLUME (%v): with a read-only root nothing could be written", dataDir, img.volumes)
	}
	if _, port, err := net.SplitHostPort(img.env["FROND_HTTP_ADDR"]); err != nil {
		bad("final stage: ENV FROND_HTTP_ADDR %q: %v", img.env["FROND_HTTP_ADDR"], err)
	} else if !slices.Contains(img.expose, port) {
		bad("final stage: the HTTP port %s is not EXPOSEd (%v)", port, img.expose)
	}
	var binary, certs, data bool
	for _, c := range copies {
		f, rest := flags(c.args)
		from := f["from"]
		parts := strings.Fields(rest)
		if len(parts) != 2 {
			continue
		}
		src, dst := path.Clean(parts[0]), path.Clean(parts[1])
		switch {
		case from == build.name && src == path.Clean(buildOut) && dst == "/frond":
			binary = true
		case from != "" && dst == "/etc/ssl/certs/ca-certificates.crt":
			certs = true
		case dst == path.Clean(dataDir):
			data = true
			if f["chown"] != img.user {
				bad("final stage: COPY to the data directory with --chown=%s; want the USER %s", f["chown"], img.user)
			}
		}
	}
	if !binary {
		bad("final stage: no COPY --from=%s %s /frond (the binary scripts/build.sh wrote)", build.name, buildOut)
	}
	if !certs {
		bad("final stage: no CA certificates copied to /etc/ssl/certs/ca-certificates.crt")
	}
	if !data {
		bad("final stage: no COPY --chown of the data directory %s: a new volume would be owned by root", dataDir)
	}
	for _, l := range []string{"title", "source", "version", "revision", "created"} {
		if labels["org.opencontainers.image."+l] == "" {
			bad("final stage: no LABEL org.opencontainers.image.%s", l)
		}
	}
	return img, errs
}

// The Dockerfile: multi-stage, the Go image pinned, scripts/build.sh with
// its values, a static binary run as a numeric non-root user, the data
// directory a volume owned by it, a health check by the binary itself.
func TestDockerfile(t *testing.T) {
	img, errs := checkDockerfile(read(t, "Dockerfile"), read(t, "go.mod"), read(t, "scripts/build.sh"))
	problemsOf(t, errs)
	// The image's environment is a valid configuration.
	var environ []string
	for k, v := range img.env {
		environ = append(environ, k+"="+v)
	}
	if _, err := loadConfig(environ); err != nil {
		t.Errorf("the image's ENV: %v", err)
	}
}

// A Dockerfile that breaks the rules fails the check.
func TestDockerfileCheckRefusesBadOnes(t *testing.T) {
	good := read(t, "Dockerfile")
	goMod, script := read(t, "go.mod"), read(t, "scripts/build.sh")
	if _, errs := checkDockerfile(good, goMod, script); len(errs) > 0 {
		t.Fatalf("the Dockerfile fails before it is broken: %v", errs)
	}
	fromLine := regexp.MustCompile(`(?m)^FROM --platform=\$BUILDPLATFORM (golang:[^ ]+) AS build$`)
	m := fromLine.FindStringSubmatch(good)
	if m == nil {
		t.Fatalf("the test expects the build stage's FROM line to be %s", fromLine)
	}
	goImage := "FROM --platform=$BUILDPLATFORM " + m[1] + " AS build"
	for _, c := range []struct{ name, from, to, want string }{
		{"floating Go tag", goImage, "FROM golang:1.26-bookworm AS build", "want golang:1.N.P-bookworm"},
		{"latest", goImage, "FROM golang:latest AS build", "not pinned"},
		{"old Go", goImage, "FROM golang:1.25.9-bookworm AS build", "does not match go.mod"},
		{"root user", "USER 65532:65532", "USER 0:0", "is root"},
		{"named user", "USER 65532:65532", "USER nonroot", "want a numeric uid:gid"},
		{"no user", "USER 65532:65532\n", "", "no USER"},
		{"shell health check", `CMD ["/frond", "health", "--timeout", "4s"]`, `CMD curl -f http://localhost:8080/healthz`, "want CMD in exec form"},
		{"health check by another tool", `CMD ["/frond", "health", "--timeout", "4s"]`, `CMD ["/usr/bin/wget", "-q", "http://127.0.0.1:8080/healthz"]`, "want the binary itself"},
		{"ADD of a URL", "COPY go.mod go.sum ./", "ADD https://example.com/go.mod ./", "ADD of a URL"},
		{"no build script", `bash scripts/build.sh /out/frond`, `go build -o /out/frond`, "no RUN of scripts/build.sh"},
		{"no ARG", "ARG FROND_COMMIT\n", "", "no ARG FROND_COMMIT"},
		{"no volume", `VOLUME ["/var/lib/frond"]`, ``, "is no VOLUME"},
		{"data directory owned by root", "COPY --from=build --chown=65532:65532 /out/data/", "COPY --from=build /out/data/", "--chown="},
		{"final stage on a distribution", "FROM scratch", "FROM debian:bookworm", "want scratch or gcr.io/distroless/static"},
		{"one stage", "FROM scratch", "# FROM scratch", "want a multi-stage build"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(good, c.from) {
				t.Fatalf("the Dockerfile has no %q to break", c.from)
			}
			bad := strings.Replace(good, c.from, c.to, 1)
			_, errs := checkDockerfile(bad, goMod, script)
			wantProblem(t, errs, c.want)
		})
	}
}

// dockerignored reports whether the .dockerignore patterns exclude rel
// (slash-separated, from the context's root): a pattern excludes a path
// when it matches the path or one of its parent directories; the last
// matching pattern wins, and !pattern includes again.
func dockerignored(patterns []string, rel string) bool {
	parts := strings.Split(rel, "/")
	excluded := false
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		p = path.Clean(strings.TrimPrefix(strings.TrimPrefix(p, "!"), "/"))
		re := regexp.MustCompile("^" + globToRegexp(p) + "$")
		for i := 1; i <= len(parts); i++ {
			if re.MatchString(strings.Join(parts[:i], "/")) {
				excluded = !neg
				break
			}
		}
	}
	return excluded
}

func globToRegexp(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case strings.HasPrefix(p[i:], "**/"):
			b.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(p[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// .dockerignore keeps .git and build output out of the context, and
// leaves in everything scripts/build.sh compiles: every Go and embedded
// file of the module's packages that cmd/frond imports, go.mod, go.sum and
// the script.
func TestDockerignore(t *testing.T) {
	var patterns []string
	for _, l := range strings.Split(read(t, ".dockerignore"), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	for _, p := range []string{".git", ".git/HEAD", "dist/frond-linux-amd64", "dist/frond-v0.1.0-linux-amd64/frond", "data/frond.db"} {
		if !dockerignored(patterns, p) {
			t.Errorf(".dockerignore does not leave out %s", p)
		}
	}
	// The release archives and their sums: the image takes its binary from
	// them when scripts/release.sh has built them (issue 44, item 2), after
	// checking the archive's SHA-256.
	for _, p := range []string{"dist/frond-v0.1.0-linux-amd64.tar.gz", "dist/SHA256SUMS"} {
		if dockerignored(patterns, p) {
			t.Errorf(".dockerignore leaves out %s, which the image is built from", p)
		}
	}
	if df := read(t, "Dockerfile"); !strings.Contains(df, `dist/${archive}.tar.gz`) || !strings.Contains(df, "sha256sum -c") {
		t.Error("the Dockerfile does not take the release archive from dist/, checked against SHA256SUMS")
	}
	out, err := exec.Command("go", "list", "-deps", "-e", "-f",
		`{{if .Module}}{{if eq .Module.Path "github.com/frond-id/frond"}}{{.Dir}}|{{join .GoFiles ","}}|{{join .EmbedFiles ","}}{{end}}{{end}}`,
		"../cmd/frond").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, _ := filepath.Abs(repo)
	needed := []string{"go.mod", "go.sum", "scripts/build.sh"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 3 {
			continue
		}
		dir, _ := filepath.Rel(root, f[0])
		for _, list := range f[1:] {
			for _, name := range strings.Split(list, ",") {
				if name != "" {
					needed = append(needed, filepath.ToSlash(filepath.Join(dir, name)))
				}
			}
		}
	}
	if len(needed) < 20 {
		t.Fatalf("go list found only %v", needed)
	}
	for _, p := range needed {
		if dockerignored(patterns, p) {
			t.Errorf(".dockerignore leaves out %s, which the build needs", p)
		}
	}
	// The matcher itself.
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"**/*_test.go", "a/b/c_test.go", true}, {"**/*_test.go", "c_test.go", true},
		{"**/*_test.go", "a/b/c.go", false}, {"docs", "docs/x.md", true}, {"*.md", "docs/x.md", false},
		{"frond", "cmd/frond/main.go", false}, {"frond", "frond", true},
	} {
		if got := dockerignored([]string{c.pattern}, c.path); got != c.want {
			t.Errorf("dockerignored(%q, %q) = %v", c.pattern, c.path, got)
		}
	}
}

// ---- compose ----

const composeFile = "deploy/compose/compose.yaml"

func composeDoc(t *testing.T, src string) map[string]any {
	t.Helper()
	doc, err := yaml.Parser().Unmarshal([]byte(src))
	if err != nil {
		t.Fatalf("%s: %v", composeFile, err)
	}
	return doc
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asList(v any) []string {
	var out []string
	switch l := v.(type) {
	case []any:
		for _, e := range l {
			out = append(out, fmt.Sprint(e))
		}
	case string:
		out = append(out, l)
	}
	return out
}

// composeEnv is a service's environment as KEY=VALUE (map or list form).
func composeEnv(svc map[string]any) map[string]string {
	env := map[string]string{}
	switch e := svc["environment"].(type) {
	case map[string]any:
		for k, v := range e {
			env[k] = fmt.Sprint(v)
		}
	case []any:
		for _, kv := range e {
			k, v, _ := strings.Cut(fmt.Sprint(kv), "=")
			env[k] = v
		}
	}
	return env
}

var (
	exactMariaDB = regexp.MustCompile(`^(docker\.io/(library/)?)?mariadb:\d+\.\d+\.\d+(@sha256:[0-9a-f]{64})?$`)
	exactEtcd    = regexp.MustCompile(`^([a-z0-9.-]+/)*etcd:v\d+\.\d+\.\d+(@sha256:[0-9a-f]{64})?$`)
)

// checkCompose checks the compose file's structure; it returns the frond
// services' names.
func checkCompose(doc map[string]any, dir string) ([]string, []error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	services := asMap(doc["services"])
	root, _ := filepath.Abs(repo)
	var fronds, mariadb, etcd []string
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range services {
			if !yield(k) {
				return
			}
		}
	}) {
		svc := asMap(services[name])
		image := fmt.Sprint(svc["image"])
		if b := asMap(svc["build"]); b != nil {
			ctx, _ := filepath.Abs(filepath.Join(dir, fmt.Sprint(b["context"])))
			df := fmt.Sprint(b["dockerfile"])
			if ctx != root || (b["dockerfile"] != nil && df != "Dockerfile") {
				bad("service %s: builds %s in %s; want the repository's Dockerfile", name, df, ctx)
			}
			fronds = append(fronds, name)
		} else {
			switch {
			case strings.Contains(image, "mariadb"):
				mariadb = append(mariadb, name)
				if !exactMariaDB.MatchString(image) {
					bad("service %s: image %s: want an exact version (mariadb:11.4.7)", name, image)
				}
			case strings.Contains(image, "etcd"):
				etcd = append(etcd, name)
				if !exactEtcd.MatchString(image) {
					bad("service %s: image %s: want an exact version (quay.io/coreos/etcd:v3.6.7)", name, image)
				}
			default:
				bad("service %s: image %s: neither frond (built here), mariadb nor etcd", name, image)
			}
		}
		hc := asMap(svc["healthcheck"])
		if test := asList(hc["test"]); len(test) == 0 || test[0] == "NONE" || hc["disable"] == true {
			bad("service %s: no healthcheck", name)
		}
	}
	if len(fronds) != 2 {
		bad("want two frond services built from the Dockerfile; have %v", fronds)
	}
	if len(mariadb) != 1 || len(etcd) != 1 {
		bad("want one mariadb and one etcd service; have %v and %v", mariadb, etcd)
	}
	volumes := asMap(doc["volumes"])
	secrets := asMap(doc["secrets"])
	dataVolumes := map[string]string{}
	for _, name := range fronds {
		svc := asMap(services[name])
		test := asList(asMap(svc["healthcheck"])["test"])
		if len(test) < 3 || test[0] != "CMD" || test[1] != "/frond" || test[2] != "health" {
			bad("service %s: healthcheck %v: want [CMD, /frond, health, ...] (the image has no shell)", name, test)
		}
		deps := asMap(svc["depends_on"])
		for _, dep := range append(slices.Clone(mariadb), etcd...) {
			if c := asMap(deps[dep])["condition"]; c != "service_healthy" {
				bad("service %s: depends_on %s: condition %v; want service_healthy", name, dep, c)
			}
		}
		if svc["read_only"] != true {
			bad("service %s: read_only is not true", name)
		}
		if d, err := time.ParseDuration(fmt.Sprint(svc["stop_grace_period"])); err != nil || d <= defaultShutdown() {
			bad("service %s: stop_grace_period %v: want longer than shutdown_timeout", name, svc["stop_grace_period"])
		}
		env := composeEnv(svc)
		// The admin token: a compose secret.
		tf := env["FROND_ADMIN_TOKEN_FILE"]
		secret, ok := strings.CutPrefix(tf, "/run/secrets/")
		if !ok || !slices.Contains(asList(svc["secrets"]), secret) || asMap(secrets[secret])["file"] == nil {
			bad("service %s: FROND_ADMIN_TOKEN_FILE %q is not a secret the service has (/run/secrets/NAME, a top-level secret with a file)", name, tf)
		}
		// The data directory: a named volume of its own.
		mounted := false
		for _, v := range asList(svc["volumes"]) {
			src, dst, _ := strings.Cut(v, ":")
			if dst == "/var/lib/frond" {
				mounted = true
				if _, ok := volumes[src]; !ok {
					bad("service %s: %s is not a named volume", name, src)
				}
				if other, ok := dataVolumes[src]; ok {
					bad("services %s and %s share the data volume %s", other, name, src)
				}
				dataVolumes[src] = name
			}
		}
		if !mounted {
			bad("service %s: no volume at the data directory /var/lib/frond", name)
		}
	}
	return fronds, errs
}

// The compose file: two frond nodes built from the Dockerfile, MariaDB and
// etcd at exact versions, health checks everywhere, the nodes waiting for
// healthy servers, the admin token a secret, and a configuration frond
// accepts (from the secrets init-secrets.sh writes).
func TestCompose(t *testing.T) {
	dir := filepath.Join(repo, "deploy/compose")
	doc := composeDoc(t, read(t, composeFile))
	fronds, errs := checkCompose(doc, dir)
	problemsOf(t, errs)

	// init-secrets.sh writes the secrets; frond accepts each node's
	// environment with them (store from the config file, registry etcd).
	sh := testenv.Tool(t, "apt-get install dash", "sh")
	secretsDir := filepath.Join(t.TempDir(), "secrets")
	if out, err := exec.Command(sh, filepath.Join(dir, "init-secrets.sh"), secretsDir).CombinedOutput(); err != nil {
		t.Fatalf("init-secrets.sh: %v\n%s", err, out)
	}
	pw, err := os.ReadFile(filepath.Join(secretsDir, "db-password"))
	if err != nil {
		t.Fatal(err)
	}
	secrets := asMap(doc["secrets"])
	services := asMap(doc["services"])
	for _, name := range fronds {
		env := composeEnv(asMap(services[name]))
		var environ []string
		for k, v := range env {
			if s, ok := strings.CutPrefix(v, "/run/secrets/"); ok {
				v = filepath.Join(secretsDir, filepath.Base(fmt.Sprint(asMap(secrets[s])["file"])))
			}
			environ = append(environ, k+"="+v)
		}
		cfg, err := loadConfig(append(environ, "FROND_DATA_DIR=/var/lib/frond"))
		if err != nil {
			t.Errorf("service %s: frond refuses its configuration: %v", name, err)
			continue
		}
		u, err := url.Parse(cfg.Store)
		if err != nil || u.Scheme != "mysql" || u.Hostname() != "mariadb" {
			t.Errorf("service %s: store %q: want mysql://...@mariadb", name, cfg.Store)
		} else if p, _ := u.User.Password(); p != string(pw) {
			t.Errorf("service %s: the store URL's password is not MariaDB's (db-password)", name)
		}
		if !strings.HasPrefix(cfg.Registry, "etcd://etcd:") {
			t.Errorf("service %s: registry %q: want etcd://etcd:...", name, cfg.Registry)
		}
	}
	for _, f := range []string{"admin-token", "db-password", "frond.yaml"} {
		fi, err := os.Stat(filepath.Join(secretsDir, f))
		if err != nil {
			t.Error(err)
		} else if fi.Mode().Perm()&0o004 == 0 {
			t.Errorf("secrets/%s is %v: the containers' users could not read it", f, fi.Mode())
		}
	}
	if g := read(t, "deploy/compose/.gitignore"); !strings.Contains(g, "/secrets/") {
		t.Errorf("deploy/compose/.gitignore does not keep secrets/ out of git")
	}
}

// A compose file that breaks the rules fails the check.
func TestComposeCheckRefusesBadOnes(t *testing.T) {
	dir := filepath.Join(repo, "deploy/compose")
	good := read(t, composeFile)
	if _, errs := checkCompose(composeDoc(t, good), dir); len(errs) > 0 {
		t.Fatalf("the compose file fails before it is broken: %v", errs)
	}
	for _, c := range []struct{ name, from, to, want string }{
		{"floating MariaDB", "image: mariadb:11.4.7", "image: mariadb:11.4", "want an exact version"},
		{"latest etcd", "image: quay.io/coreos/etcd:v3.6.7", "image: quay.io/coreos/etcd:latest", "want an exact version"},
		{"started is not healthy", "    mariadb:\n      condition: service_healthy", "    mariadb:\n      condition: service_started", "want service_healthy"},
		{"no health check", `      test: ["CMD", "healthcheck.sh", "--connect", "--innodb_initialized"]`, `      disable: true`, "service mariadb: no healthcheck"},
		{"token in the open", "FROND_ADMIN_TOKEN_FILE: /run/secrets/admin_token", "FROND_ADMIN_TOKEN_FILE: /tmp/token", "is not a secret the service has"},
		{"writable root", "  read_only: true", "  read_only: false", "read_only is not true"},
		{"shared data volume", "- frond-2-data:/var/lib/frond", "- frond-1-data:/var/lib/frond", "share the data volume"},
		{"short grace", "stop_grace_period: 30s", "stop_grace_period: 10s", "stop_grace_period 10s"},
		{"health check by shell", `test: ["CMD", "/frond", "health", "--ready", "--timeout", "4s"]`, `test: ["CMD-SHELL", "curl -f localhost:8080/healthz"]`, "want [CMD, /frond, health"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(good, c.from) {
				t.Fatalf("the compose file has no %q to break", c.from)
			}
			_, errs := checkCompose(composeDoc(t, strings.Replace(good, c.from, c.to, 1)), dir)
			wantProblem(t, errs, c.want)
		})
	}
}

// docker-compose (Debian's 1.29) accepts the file.
func TestComposeConfig(t *testing.T) {
	dc := testenv.Tool(t, "apt-get install --no-install-recommends docker-compose", "docker-compose")
	cmd := exec.Command(dc, "-f", filepath.Join(repo, composeFile), "config", "-q")
	if out, err := cmd.CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("docker-compose config -q: %v\n%s", err, out)
	}
}

// ---- systemd ----

// unit parses a systemd unit: section -> key -> values in order.
func unit(src string) map[string]map[string][]string {
	u := map[string]map[string][]string{}
	section := ""
	for _, l := range strings.Split(src, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";"):
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			section = l[1 : len(l)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
		default:
			k, v, _ := strings.Cut(l, "=")
			u[section][strings.TrimSpace(k)] = append(u[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return u
}

// systemdSeconds parses a systemd time span of the simple kinds: 30, 30s,
// 1min 30s.
func systemdSeconds(s string) (time.Duration, error) {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "min", "m"), " ", "")
	if _, err := strconv.Atoi(s); err == nil {
		s += "s"
	}
	return time.ParseDuration(s)
}

// checkUnit checks the unit's directives; dataDir and shutdown are
// data_dir and shutdown_timeout of its configuration file; tokenFile its
// admin_token_file.
func checkUnit(src, dataDir, tokenFile string, shutdown time.Duration) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	svc := unit(src)["Service"]
	last := func(k string) (string, bool) {
		v := svc[k]
		if len(v) == 0 {
			return "", false
		}
		return v[len(v)-1], true
	}
	want := func(k, v string) {
		if got, _ := last(k); got != v {
			bad("%s=%s; want %s=%s", k, got, k, v)
		}
	}
	if dyn, _ := last("DynamicUser"); dyn != "yes" {
		if u, _ := last("User"); u == "" || u == "root" || u == "0" {
			bad("neither DynamicUser=yes nor a dedicated User=")
		}
	}
	want("StateDirectory", "frond")
	if dataDir != "/var/lib/frond" {
		bad("data_dir %s: want /var/lib/frond, the StateDirectory", dataDir)
	}
	want("ProtectSystem", "strict")
	if v, _ := last("ProtectHome"); v != "yes" && v != "read-only" && v != "tmpfs" {
		bad("ProtectHome=%s", v)
	}
	want("NoNewPrivileges", "yes")
	want("PrivateTmp", "yes")
	if v, ok := last("CapabilityBoundingSet"); !ok || v != "" {
		bad("CapabilityBoundingSet=%s: want it empty (no capability)", v)
	}
	if v, _ := last("RestrictAddressFamilies"); !strings.Contains(v, "AF_INET") || !strings.Contains(v, "AF_INET6") || strings.HasPrefix(v, "~") {
		bad("RestrictAddressFamilies=%s: want an allow list with AF_INET and AF_INET6", v)
	}
	if !slices.ContainsFunc(svc["SystemCallFilter"], func(v string) bool { return strings.Contains(v, "@system-service") && !strings.HasPrefix(v, "~") }) {
		bad("no SystemCallFilter=@system-service")
	}
	want("Restart", "on-failure")
	if v, ok := last("RestartSec"); !ok {
		bad("no RestartSec")
	} else if _, err := systemdSeconds(v); err != nil {
		bad("RestartSec=%s: %v", v, err)
	}
	if v, _ := last("TimeoutStopSec"); v == "" {
		bad("no TimeoutStopSec")
	} else if d, err := systemdSeconds(v); err != nil || d <= shutdown {
		bad("TimeoutStopSec=%s: want longer than shutdown_timeout %v", v, shutdown)
	}
	if v, _ := last("LimitNOFILE"); v == "" {
		bad("no LimitNOFILE")
	}
	want("ExecStart", "/usr/local/bin/frond serve --config /etc/frond/frond.yaml")
	// The admin token is a credential: readable by the dynamic user, and
	// by nobody else.
	cred, ok := strings.CutPrefix(tokenFile, "/run/credentials/frond.service/")
	if !ok || !slices.ContainsFunc(svc["LoadCredential"], func(v string) bool { return strings.HasPrefix(v, cred+":") }) {
		bad("admin_token_file %s is no LoadCredential= of the unit", tokenFile)
	}
	if len(unit(src)["Install"]["WantedBy"]) == 0 {
		bad("no [Install] WantedBy=")
	}
	return errs
}

// systemdUnit reads the unit and its example configuration, and validates
// the configuration as frond serve would (the admin token file, which
// systemd creates, replaced by a test file).
func systemdUnit(t *testing.T) (src string, cfg *config.Config, tokenPath string) {
	t.Helper()
	src = read(t, "deploy/systemd/frond.service")
	cfgFile := filepath.Join(repo, "deploy/systemd/frond.yaml")
	raw, err := yaml.Parser().Unmarshal([]byte(read(t, "deploy/systemd/frond.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	tokenPath = fmt.Sprint(raw["admin_token_file"])
	environ := []string{"FROND_CONFIG=" + cfgFile, "FROND_ADMIN_TOKEN_FILE=" + tokenFile(t)}
	// The example environment file's variables, uncommented.
	for _, l := range strings.Split(read(t, "deploy/systemd/frond.env"), "\n") {
		if kv := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#")); strings.HasPrefix(kv, "FROND_") && strings.Contains(kv, "=") {
			environ = append(environ, kv)
		}
	}
	cfg, err = loadConfig(environ)
	if err != nil {
		t.Fatalf("deploy/systemd/frond.yaml with frond.env: %v", err)
	}
	return src, cfg, tokenPath
}

// The systemd unit: a dynamic user with its state directory, hardened, a
// stop timeout longer than shutdown_timeout, and a configuration frond
// accepts.
func TestSystemdUnit(t *testing.T) {
	src, cfg, tokenPath := systemdUnit(t)
	problemsOf(t, checkUnit(src, cfg.DataDir, tokenPath, cfg.ShutdownTimeout))
	if cfg.Store == "" || cfg.Registry == "file" {
		t.Errorf("frond.env's examples: store %q, registry %q: want both set", cfg.Store, cfg.Registry)
	}

	bad := []struct{ from, to, want string }{
		{"ProtectSystem=strict", "ProtectSystem=full", "ProtectSystem=full"},
		{"CapabilityBoundingSet=\n", "CapabilityBoundingSet=CAP_NET_BIND_SERVICE\n", "want it empty"},
		{"TimeoutStopSec=30s", "TimeoutStopSec=10s", "TimeoutStopSec=10s"},
		{"DynamicUser=yes", "User=root", "neither DynamicUser"},
		{"SystemCallFilter=@system-service", "SystemCallFilter=~@mount", "no SystemCallFilter"},
		{"LoadCredential=admin-token:", "LoadCredential=token:", "no LoadCredential"},
	}
	for _, c := range bad {
		if !strings.Contains(src, c.from) {
			t.Fatalf("the unit has no %q to break", c.from)
		}
		wantProblem(t, checkUnit(strings.Replace(src, c.from, c.to, 1), cfg.DataDir, tokenPath, cfg.ShutdownTimeout), c.want)
	}
}

// systemd-analyze verify accepts the unit and prints nothing about it.
// verify needs ExecStart's binary to exist and be executable, so it runs on
// a copy whose ExecStart is /bin/true with frond's arguments; the command
// line itself is checked by TestSystemdUnit, and the configuration file by
// config.Load there.
func TestSystemdAnalyzeVerify(t *testing.T) {
	sa := testenv.Tool(t, "apt-get install systemd", "systemd-analyze")
	src := read(t, "deploy/systemd/frond.service")
	const bin = "ExecStart=/usr/local/bin/frond "
	if !strings.Contains(src, bin) {
		t.Fatalf("the unit has no %q", bin)
	}
	verify := func(t *testing.T, src string) (string, error) {
		dir := t.TempDir()
		f := filepath.Join(dir, "frond.service")
		if err := os.WriteFile(f, []byte(strings.Replace(src, bin, "ExecStart=/bin/true ", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(sa, "verify", f).CombinedOutput()
		var about []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "frond.service") {
				about = append(about, l)
			}
		}
		if err == nil && len(about) > 0 {
			err = fmt.Errorf("warnings")
		}
		return strings.Join(about, "\n"), err
	}
	if out, err := verify(t, src); err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	// A misspelt directive is only a warning to systemd: the test fails on it.
	if out, err := verify(t, strings.Replace(src, "ProtectHome=yes", "ProtectHome=yes\nProtectHomee=yes", 1)); err == nil {
		t.Errorf("systemd-analyze verify passed a unit with an unknown key")
	} else if !strings.Contains(out, "ProtectHomee") {
		t.Errorf("systemd-analyze verify: %v, %q; want a warning naming ProtectHomee", err, out)
	}
}

// ---- Kubernetes: the frond containers' environment ----

// secretExamples stand for the Secret's values the manifests read.
var secretExamples = map[string]string{
	"store-url":    "mysql://frond:secret@mysql:3306/frond",
	"registry-url": "mysql://frond:secret@mysql:3306/frond",
}

// Every frond container of the Kubernetes manifests has an environment
// frond accepts (with the image's ENV, and example Secret values). The
// manifests' structure is checked by deploy/kubernetes/check.
func TestKubernetesEnvironments(t *testing.T) {
	img, errs := checkDockerfile(read(t, "Dockerfile"), read(t, "go.mod"), read(t, "scripts/build.sh"))
	if len(errs) > 0 {
		t.Fatalf("Dockerfile: %v", errs)
	}
	files, err := filepath.Glob(filepath.Join(repo, "deploy/kubernetes/*/*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			m, err := yaml.Parser().Unmarshal([]byte(doc))
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			if k := m["kind"]; k != "Deployment" && k != "StatefulSet" {
				continue
			}
			pod := asMap(asMap(asMap(m["spec"])["template"])["spec"])
			containers, _ := pod["containers"].([]any)
			for _, c := range containers {
				c := asMap(c)
				if c["name"] != "frond" {
					continue
				}
				seen++
				env := map[string]string{}
				for k, v := range img.env {
					env[k] = v
				}
				list, _ := c["env"].([]any)
				for _, e := range list {
					e := asMap(e)
					name := fmt.Sprint(e["name"])
					if !strings.HasPrefix(name, "FROND_") {
						continue
					}
					if ref := asMap(asMap(e["valueFrom"])["secretKeyRef"]); ref != nil {
						v, ok := secretExamples[fmt.Sprint(ref["key"])]
						if !ok {
							t.Errorf("%s: %s from Secret key %v: add an example value to secretExamples", f, name, ref["key"])
						}
						env[name] = v
					} else if ref := asMap(asMap(e["valueFrom"])["fieldRef"]); ref != nil {
						env[name] = "example-of-" + fmt.Sprint(ref["fieldPath"])
					} else {
						env[name] = fmt.Sprint(e["value"])
					}
					if name == "FROND_REGISTRY" && strings.HasPrefix(env[name], "static:ordinal") {
						// The ordinal comes from the host name, which is
						// not a pod's here: check the rest with worker 0.
						env[name] = "static:0"
					}
				}
				if _, ok := env["FROND_ADMIN_TOKEN_FILE"]; ok {
					env["FROND_ADMIN_TOKEN_FILE"] = tokenFile(t)
				}
				var environ []string
				for k, v := range env {
					environ = append(environ, k+"="+v)
				}
				if _, err := loadConfig(environ); err != nil {
					t.Errorf("%s: frond refuses the container's environment: %v", f, err)
				}
			}
		}
	}
	if seen < 3 {
		t.Errorf("found %d frond containers under deploy/kubernetes; want one per variant (3)", seen)
	}
}

// docs/deploy.md names every file it is about.
func TestDeployDocNamesTheFiles(t *testing.T) {
	doc := read(t, "docs/deploy.md")
	for _, f := range []string{"Dockerfile", "deploy/compose/compose.yaml", "deploy/compose/init-secrets.sh",
		"deploy/systemd/frond.service", "deploy/systemd/frond.yaml", "deploy/systemd/frond.env",
		"deploy/kubernetes/segment", "deploy/kubernetes/statefulset", "deploy/kubernetes/etcd",
		"deploy/kubernetes/check", "scripts/build.sh", "scripts/release.sh"} {
		if !strings.Contains(doc, f) {
			t.Errorf("docs/deploy.md does not mention %s", f)
		}
		if _, err := os.Stat(filepath.Join(repo, f)); err != nil {
			t.Error(err)
		}
	}
}
