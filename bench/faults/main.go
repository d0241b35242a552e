// Command faults measures what callers see while a segment store is slow,
// stopped, cut or restarted: frond, a single-buffer reference service
// (bench/singlebuffer) and a trivial server (bench/trivial) are loaded at
// the same fixed rate at the same time (frond bench --rate --timeline, an
// open loop: a stall is not hidden), while a TCP proxy between the services
// and the store (internal/faultproxy) plays one fault. Each run reports per
// second p50/p99/p99.9/max and errors, the percentiles of the quiet seconds
// and of the fault's seconds, and their ratios; -out gets the tables, the
// timelines and one picture per fault (bench/faults/plot.py).
//
//	go run ./bench/faults -mysql URL -postgres URL   (bench/faults.sh passes them)
//	go run ./bench/faults -smoke                     (one 5 s stop on Redis: 0 errors, 0 duplicates, or exit 1)
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/frond-id/frond/internal/faultproxy"
)

// fault is one fault the proxy plays.
type fault struct {
	Name, Title string
	Span        time.Duration
	start, stop func(p *faultproxy.Proxy) error
}

var allFaults = []fault{
	{"slow20", "every store query +20 ms for 20 s", 20 * time.Second,
		func(p *faultproxy.Proxy) error { p.Delay(20 * time.Millisecond); return nil },
		func(p *faultproxy.Proxy) error { p.Delay(0); return nil }},
	{"slow200", "every store query +200 ms for 20 s", 20 * time.Second,
		func(p *faultproxy.Proxy) error { p.Delay(200 * time.Millisecond); return nil },
		func(p *faultproxy.Proxy) error { p.Delay(0); return nil }},
	{"stop5", "store stopped 5 s (SIGSTOP: connections held, nothing answered)", 5 * time.Second,
		func(p *faultproxy.Proxy) error { p.Hold(); return nil },
		func(p *faultproxy.Proxy) error { p.Release(); return nil }},
	{"stop60", "store stopped 60 s (SIGSTOP)", 60 * time.Second,
		func(p *faultproxy.Proxy) error { p.Hold(); return nil },
		func(p *faultproxy.Proxy) error { p.Release(); return nil }},
	{"cut30", "store cut 30 s (connections reset and refused)", 30 * time.Second,
		func(p *faultproxy.Proxy) error { p.Cut(); return nil },
		func(p *faultproxy.Proxy) error { return p.Restore() }},
	{"restart", "store restarted (connections reset, refused 3 s)", 3 * time.Second,
		func(p *faultproxy.Proxy) error { p.Cut(); return nil },
		func(p *faultproxy.Proxy) error { return p.Restore() }},
}

// store is a segment store behind the proxy: its address and its URL with
// the proxy's address in place of its own.
type store struct {
	Name   string
	target string
	url    func(addr string) string
}

// config is a whole benchmark.
type config struct {
	stores, faults, doors         []string
	doorStores, doorFaults        []string
	rate                          float64
	quiet, after, catchUp, warmup time.Duration
	step, refStep, concurrency    int
	out, docs, from               string
	bin                           string // the binaries' folder
	smoke                         bool
}

// target is one service a run loads.
type target struct {
	Name, Protocol, Server string
	Timeline               []second
	Errors                 map[string]int64
	Duplicates             int64
	Requests               int64
	Quiet, Fault           stats
	// FaultFrom, FaultTo: the fault's span in the timeline's seconds (of
	// this target's pass).
	FaultFrom, FaultTo float64
	Failed             string `json:",omitempty"` // frond bench itself failed
}

// second is one second of a timeline, as plotted.
type second struct {
	T                   int     // seconds since the run's first
	Requests, Errors    int64   //
	P50, P99, P999, Max float64 // µs
	hist                [][2]int64
}

// stats are the percentiles of a span of seconds, merged.
type stats struct {
	Requests, Errors    int64
	P50, P99, P999, Max float64
}

// runResult is one run: a store, a fault, a front door.
type runResult struct {
	Store, Fault, Title, Door string
	// FaultFrom, FaultTo: the fault's span in the timeline's seconds.
	FaultFrom, FaultTo float64
	// Horizon is frond's runway when the fault began: seconds of IDs
	// buffered at the current rate, from its /metrics.
	Horizon float64
	// Step is the tag's first step on frond, RefStep the reference's.
	Step, RefStep int
	Rate          float64
	Targets       []*target
}

func main() {
	var c config
	var stores, faults, doors, doorStores, doorFaults, mysqlURL, pgURL string
	flag.StringVar(&stores, "stores", "mariadb,postgres,redis", "stores of the main runs (Leaf's HTTP API): mariadb, postgres, redis")
	flag.StringVar(&faults, "faults", "slow20,slow200,stop5,stop60,cut30,restart", "faults of the main runs")
	flag.StringVar(&doors, "doors", "http,grpc,resp,client", "other front doors, each run on -door-stores with -door-faults")
	flag.StringVar(&doorStores, "door-stores", "redis", "stores of the front doors' runs")
	flag.StringVar(&doorFaults, "door-faults", "stop5,cut30", "faults of the front doors' runs")
	flag.StringVar(&mysqlURL, "mysql", os.Getenv("FROND_TEST_MYSQL_URL"), "MariaDB/MySQL URL (its host is replaced by the proxy's)")
	flag.StringVar(&pgURL, "postgres", os.Getenv("FROND_TEST_POSTGRES_URL"), "PostgreSQL URL (its host is replaced by the proxy's)")
	flag.Float64Var(&c.rate, "rate", 2000, "requests per second to each service (open loop)")
	flag.DurationVar(&c.quiet, "quiet", 20*time.Second, "measured seconds before the fault")
	flag.DurationVar(&c.after, "after", 10*time.Second, "measured seconds after the fault")
	flag.DurationVar(&c.catchUp, "catch-up", 2*time.Second, "seconds after the fault still counted as the fault's (requests queued behind it)")
	flag.DurationVar(&c.warmup, "warmup", 3*time.Second, "unmeasured seconds first")
	flag.IntVar(&c.step, "step", 150000, "the tag's first step on frond (it adapts): sized for a 60 s outage at 2,000 IDs/s, as docs/operations.md says (rate x outage / 0.9)")
	flag.IntVar(&c.refStep, "ref-step", 5000, "the reference's step (fixed): 2.5 s of IDs at 2,000/s, so that every fault of 3 s or more meets the end of a segment")
	flag.IntVar(&c.concurrency, "concurrency", 8, "workers of each frond bench")
	flag.StringVar(&c.out, "out", "faults-out", "folder for the results (created)")
	flag.StringVar(&c.docs, "docs", "", "copy the pictures and summary.md here too (bench/faults.sh: docs/img/faults)")
	flag.StringVar(&c.from, "from", "", "write the summary and the pictures again from this folder's runs.json (no run)")
	flag.BoolVar(&c.smoke, "smoke", false, "one 5 s stop of a Redis, 10 s quiet: exit 1 unless frond had 0 errors and 0 duplicates")
	flag.Parse()
	split := func(s string) []string {
		var out []string
		for _, f := range strings.Split(s, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
		return out
	}
	c.stores, c.faults, c.doors, c.doorStores, c.doorFaults = split(stores), split(faults), split(doors), split(doorStores), split(doorFaults)
	if c.smoke {
		c.stores, c.faults, c.doors = []string{"redis"}, []string{"stop5"}, nil
		c.quiet, c.after, c.rate = 10*time.Second, 5*time.Second, 1000
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c, mysqlURL, pgURL); err != nil {
		log.Fatalf("faults: %v", err)
	}
}

func run(ctx context.Context, c config, mysqlURL, pgURL string) error {
	if c.from != "" {
		return again(ctx, c)
	}
	if err := os.MkdirAll(filepath.Join(c.out, "logs"), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "frond-faults-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	c.bin = filepath.Join(tmp, "bin")
	for _, b := range []string{"./cmd/frond", "./bench/trivial", "./bench/singlebuffer"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", c.bin+"/", b)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build %s: %w", b, err)
		}
	}
	head := header(c) // the commit as the runs began
	if err := os.WriteFile(filepath.Join(c.out, "header.md"), []byte(head), 0o644); err != nil {
		return err
	}
	var procs procs
	defer procs.stop()

	// The stores.
	known := map[string]*store{}
	need := func(name string) bool { return slices.Contains(c.stores, name) || slices.Contains(c.doorStores, name) }
	if need("mariadb") {
		s, err := sqlStore("mariadb", mysqlURL)
		if err != nil {
			return err
		}
		known["mariadb"] = s
	}
	if need("postgres") {
		s, err := sqlStore("postgres", pgURL)
		if err != nil {
			return err
		}
		known["postgres"] = s
	}
	if need("redis") {
		s, err := startRedis(ctx, &procs, filepath.Join(tmp, "redis"), c.out)
		if err != nil {
			return err
		}
		known["redis"] = s
	}
	// The trivial servers, one per protocol, for the whole benchmark.
	trivial := map[string]string{}
	for _, proto := range []string{"http", "grpc", "resp"} {
		addr := freeAddr()
		if _, err := procs.start(ctx, c.out, "trivial-"+proto, filepath.Join(c.bin, "trivial"), "-proto", proto, "-addr", addr); err != nil {
			return err
		}
		if err := waitTCP(ctx, addr); err != nil {
			return fmt.Errorf("trivial %s: %w", proto, err)
		}
		trivial[proto] = addr
	}

	type plan struct{ store, fault, door string }
	var plans []plan
	for _, s := range c.stores {
		for _, f := range c.faults {
			plans = append(plans, plan{s, f, "leaf"})
		}
	}
	for _, d := range c.doors {
		for _, s := range c.doorStores {
			for _, f := range c.doorFaults {
				plans = append(plans, plan{s, f, d})
			}
		}
	}
	var results []*runResult
	for i, p := range plans {
		st := known[p.store]
		if st == nil {
			return fmt.Errorf("store %q: mariadb, postgres or redis", p.store)
		}
		fi := slices.IndexFunc(allFaults, func(f fault) bool { return f.Name == p.fault })
		if fi < 0 {
			return fmt.Errorf("fault %q: slow20, slow200, stop5, stop60, cut30 or restart", p.fault)
		}
		log.Printf("run %d of %d: %s, %s, over %s", i+1, len(plans), p.store, allFaults[fi].Title, p.door)
		r, err := oneRun(ctx, c, st, allFaults[fi], p.door, trivial, i)
		if err != nil {
			return fmt.Errorf("%s %s %s: %w", p.store, p.fault, p.door, err)
		}
		results = append(results, r)
		printRun(os.Stdout, r)
		if err := save(c.out, results); err != nil {
			return err
		}
	}
	if !c.smoke {
		return report(ctx, c, head, results)
	}
	summary := head + summarize(results)
	fmt.Print(summary)
	if err := os.WriteFile(filepath.Join(c.out, "summary.md"), []byte(summary), 0o644); err != nil {
		return err
	}
	for _, r := range results {
		f := r.Targets[0]
		if f.Failed != "" || len(f.Errors) > 0 || f.Duplicates > 0 || f.Requests == 0 {
			return fmt.Errorf("smoke: frond through %s: %d requests, errors %v, %d duplicates %s", r.Title, f.Requests, f.Errors, f.Duplicates, f.Failed)
		}
		for _, t := range r.Targets[1:] {
			if t.Failed != "" || t.Requests == 0 {
				return fmt.Errorf("smoke: %s measured nothing: %s", t.Name, t.Failed)
			}
		}
	}
	log.Printf("smoke: frond answered every request through %s, no duplicate", results[0].Title)
	return nil
}

// oneRun starts frond and the reference behind a fresh proxy, loads them
// and the trivial server at the same rate, and plays the fault after the
// quiet seconds.
func oneRun(ctx context.Context, c config, st *store, f fault, door string, trivial map[string]string, n int) (*runResult, error) {
	px, err := faultproxy.Start("127.0.0.1:0", st.target)
	if err != nil {
		return nil, err
	}
	defer px.Close()
	storeURL := st.url(px.Addr())
	data, err := os.MkdirTemp("", "frond-faults-data-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(data)
	var procs procs
	defer procs.stop() // first: frond stops cleanly, its store still there
	httpAddr, grpcAddr, respAddr := freeAddr(), freeAddr(), freeAddr()
	name := fmt.Sprintf("%s-%s-%s", st.Name, f.Name, door)
	if _, err := procs.start(ctx, c.out, "frond-"+name, filepath.Join(c.bin, "frond"), "serve", "--data-dir", data,
		"--http-addr", httpAddr, "--grpc-addr", grpcAddr, "--resp-addr", respAddr, "--store", storeURL, "--log-level", "warn"); err != nil {
		return nil, err
	}
	base := "http://" + httpAddr
	if err := waitHTTP(ctx, base+"/healthz"); err != nil {
		return nil, fmt.Errorf("frond serve (log: %s/logs/frond-%s.log): %w", c.out, name, err)
	}
	tag := fmt.Sprintf("faults_%d_%d", time.Now().Unix(), n)
	body, _ := json.Marshal(map[string]any{"name": tag, "step": c.step})
	resp, err := http.Post(base+"/v1/tags", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("creating tag %s: %s: %s", tag, resp.Status, msg)
	}

	r := &runResult{Store: st.Name, Fault: f.Name, Title: f.Title, Door: door, Step: c.step, RefStep: c.refStep, Rate: c.rate, Horizon: -1}
	frondServer := map[string]string{"leaf": base, "http": base, "grpc": grpcAddr, "resp": respAddr, "client": grpcAddr}[door]
	if frondServer == "" {
		return nil, fmt.Errorf("front door %q: leaf, http, grpc, resp or client", door)
	}
	r.Targets = append(r.Targets, &target{Name: "frond", Protocol: door, Server: frondServer})
	if door == "leaf" {
		refAddr := freeAddr()
		if _, err := procs.start(ctx, c.out, "singlebuffer-"+name, filepath.Join(c.bin, "singlebuffer"),
			"-addr", refAddr, "-store", storeURL, "-step", strconv.Itoa(c.refStep)); err != nil {
			return nil, err
		}
		if err := waitTCP(ctx, refAddr); err != nil {
			return nil, fmt.Errorf("singlebuffer: %w", err)
		}
		r.Targets = append(r.Targets, &target{Name: "single buffer", Protocol: "leaf", Server: "http://" + refAddr})
	}
	switch door {
	case "leaf", "http":
		r.Targets = append(r.Targets, &target{Name: "trivial", Protocol: door, Server: "http://" + trivial["http"]})
	case "grpc", "resp":
		r.Targets = append(r.Targets, &target{Name: "trivial", Protocol: door, Server: trivial[door]})
	}

	// Two passes, each with the trivial server beside it: frond, then the
	// reference (whose catch-up after a stall would load the machine under
	// frond's own measurement).
	var passes [][]*target
	for i, t := range r.Targets {
		switch {
		case t.Name == "trivial" && i > 0:
			passes[0] = append(passes[0], t)
		case t.Name == "single buffer":
			passes = append(passes, []*target{t})
		default:
			passes = append(passes, []*target{t})
		}
	}
	if len(passes) == 2 { // frond and the reference: the trivial server in each pass
		triv := passes[0][len(passes[0])-1]
		second := *triv
		second.Name = "trivial (reference's pass)"
		passes[1] = append(passes[1], &second)
		r.Targets = append(r.Targets, &second)
	}
	for i, targets := range passes {
		var h float64
		var metrics string
		if i == 0 {
			metrics = base + "/metrics"
		}
		if err := onePass(ctx, c, f, px, targets, tag, metrics, &h); err != nil {
			return nil, err
		}
		if i == 0 {
			r.Horizon = h
			r.FaultFrom, r.FaultTo = targets[0].FaultFrom, targets[0].FaultTo
		}
	}
	return r, nil
}

// onePass loads the targets at once, plays the fault after the warm-up and
// the quiet, and reads each target's timeline and percentiles; metrics,
// when set, is frond's /metrics, whose runway for the tag goes to *horizon
// as the fault begins.
func onePass(ctx context.Context, c config, f fault, px *faultproxy.Proxy, targets []*target, tag, metrics string, horizon *float64) error {
	measured := c.quiet + f.Span + c.after
	type outcome struct {
		t   *target
		out []byte
		err error
	}
	done := make(chan outcome, len(targets))
	for _, t := range targets {
		cmd := exec.CommandContext(ctx, filepath.Join(c.bin, "frond"), "bench", "--json", "--timeline", "--protocol", t.Protocol,
			"--server", t.Server, "--tag", tag, "--rate", fmt.Sprint(c.rate), "--concurrency", strconv.Itoa(c.concurrency),
			"--warmup", c.warmup.String(), "--duration", measured.String(), "--metrics-url", "")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		go func() {
			out, err := cmd.Output()
			if err != nil && len(out) == 0 {
				err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
			}
			done <- outcome{t, out, err}
		}()
	}
	start := time.Now()
	select {
	case <-time.After(c.warmup + c.quiet):
	case <-ctx.Done():
		return ctx.Err()
	}
	*horizon = -1
	if metrics != "" {
		*horizon = readHorizon(metrics, tag)
	}
	faultFrom := time.Now()
	if err := f.start(px); err != nil {
		return err
	}
	select {
	case <-time.After(f.Span):
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := f.stop(px); err != nil {
		return err
	}
	faultTo := time.Now()
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Name
	}
	log.Printf("  %s: fault from %s to %s", strings.Join(names, ", "), faultFrom.Format("15:04:05.000"), faultTo.Format("15:04:05.000"))
	for range targets {
		o := <-done
		if o.err != nil && len(o.out) == 0 {
			o.t.Failed = o.err.Error()
			continue
		}
		var res struct {
			Requests   int64            `json:"requests"`
			Duplicates int64            `json:"duplicates"`
			Errors     map[string]int64 `json:"errors"`
			Timeline   []struct {
				Unix      int64      `json:"unix"`
				Requests  int64      `json:"requests"`
				Errors    int64      `json:"errors"`
				Histogram [][2]int64 `json:"histogram"`
				Latency   struct {
					P50, P99, P999, Max float64
				} `json:"latency_us"`
			} `json:"timeline"`
		}
		if err := json.Unmarshal(o.out, &res); err != nil {
			o.t.Failed = fmt.Sprintf("frond bench's output: %v: %.200s", err, o.out)
			continue
		}
		o.t.Requests, o.t.Duplicates, o.t.Errors = res.Requests, res.Duplicates, res.Errors
		for _, s := range res.Timeline {
			o.t.Timeline = append(o.t.Timeline, second{T: int(s.Unix - start.Unix()), Requests: s.Requests, Errors: s.Errors,
				P50: s.Latency.P50, P99: s.Latency.P99, P999: s.Latency.P999, Max: s.Latency.Max, hist: s.Histogram})
		}
	}
	// The fault's seconds: those it began in to those it ended in, and the
	// catch-up after; the quiet: the measured seconds before it, but the
	// first (cut by the warm-up's end).
	from := faultFrom.Sub(time.Unix(start.Unix(), 0)).Seconds()
	to := faultTo.Sub(time.Unix(start.Unix(), 0)).Seconds()
	fFrom, fTo := int(math.Floor(from)), int(math.Ceil(to+c.catchUp.Seconds()))
	qFrom := int(math.Ceil(c.warmup.Seconds())) + 1
	for _, t := range targets {
		t.FaultFrom, t.FaultTo = from, to
		t.Quiet = merge(t.Timeline, qFrom, fFrom)
		t.Fault = merge(t.Timeline, fFrom, fTo)
	}
	return nil
}

// report writes the summary and the pictures, and copies them to the docs.
func report(ctx context.Context, c config, head string, results []*runResult) error {
	summary := head + summarize(results)
	fmt.Print(summary)
	if err := os.WriteFile(filepath.Join(c.out, "summary.md"), []byte(summary), 0o644); err != nil {
		return err
	}
	py := "python3"
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		py = "/usr/bin/python3" // Debian's, where python3-matplotlib is
	}
	plot := exec.CommandContext(ctx, py, "bench/faults/plot.py", c.out)
	plot.Stdout, plot.Stderr = os.Stdout, os.Stderr
	if err := plot.Run(); err != nil {
		return fmt.Errorf("the pictures: %v (python3 with matplotlib: apt-get install python3-matplotlib)", err)
	}
	if c.docs != "" {
		return copyOut(c.out, c.docs)
	}
	return nil
}

// again reads a benchmark's runs.json and header.md (-from) and writes its
// summary and pictures again, into the same folder.
func again(ctx context.Context, c config) error {
	b, err := os.ReadFile(filepath.Join(c.from, "runs.json"))
	if err != nil {
		return err
	}
	var results []*runResult
	if err := json.Unmarshal(b, &results); err != nil {
		return fmt.Errorf("%s/runs.json: %w", c.from, err)
	}
	head, _ := os.ReadFile(filepath.Join(c.from, "header.md"))
	c.out = c.from
	return report(ctx, c, string(head), results)
}

// header says what was measured where: the commit, the machine, the load.
func header(c config) string {
	commit := "unknown"
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		commit = strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
			commit += " with changes"
		}
	}
	cpu := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("Measured %s on commit %s, %d cores (%s), %s. Each service %.0f requests/s, open loop, %d workers; "+
		"frond's tag step %d at first (adaptive), the reference's %d (fixed); the fault's seconds count %s after it.\n\n",
		time.Now().UTC().Format("2006-01-02"), commit, runtime.NumCPU(), cpu, runtime.GOOS, c.rate, c.concurrency, c.step, c.refStep, c.catchUp)
}

// copyOut copies the pictures and the summary to the docs.
func copyOut(out, docs string) error {
	if err := os.MkdirAll(docs, 0o755); err != nil {
		return err
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.png"))
	files = append(files, filepath.Join(out, "summary.md"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(docs, filepath.Base(f)), b, 0o644); err != nil {
			return err
		}
	}
	log.Printf("copied %d files to %s", len(files), docs)
	return nil
}

// merge merges the histograms of the seconds in [from, to).
func merge(tl []second, from, to int) stats {
	h := hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 2)
	var s stats
	for _, sec := range tl {
		if sec.T < from || sec.T >= to {
			continue
		}
		s.Requests += sec.Requests
		s.Errors += sec.Errors
		for _, b := range sec.hist {
			h.RecordValues(b[0], b[1])
		}
	}
	if h.TotalCount() > 0 {
		s.P50, s.P99, s.P999, s.Max = float64(h.ValueAtQuantile(50)), float64(h.ValueAtQuantile(99)), float64(h.ValueAtQuantile(99.9)), float64(h.Max())
	}
	return s
}

// readHorizon reads frond's runway for the tag from /metrics (-1: not read).
func readHorizon(metricsURL, tag string) float64 {
	resp, err := http.Get(metricsURL)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	want := `frond_segment_buffer_horizon_seconds{tag="` + tag + `"}`
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), want); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// sqlStore is a SQL store from its URL.
func sqlStore(name, raw string) (*store, error) {
	if raw == "" {
		return nil, fmt.Errorf("%s: no URL (-mysql, -postgres, or bench/faults.sh, which starts them)", name)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s URL: %w", name, err)
	}
	return &store{Name: name, target: u.Host, url: func(addr string) string {
		v := *u
		v.Host = addr
		return v.String()
	}}, nil
}

// startRedis starts a Redis that keeps every write (an AOF synced on each),
// as frond asks of a Redis segment store, on a port of its own.
func startRedis(ctx context.Context, procs *procs, dir, out string) (*store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addr := freeAddr()
	_, port, _ := net.SplitHostPort(addr)
	if _, err := procs.start(ctx, out, "redis", "redis-server", "--bind", "127.0.0.1", "--port", port, "--dir", dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", ""); err != nil {
		return nil, fmt.Errorf("redis-server (apt-get install redis-server): %w", err)
	}
	if err := waitTCP(ctx, addr); err != nil {
		return nil, fmt.Errorf("redis-server: %w", err)
	}
	return &store{Name: "redis", target: addr, url: func(a string) string { return "redis://" + a + "/0" }}, nil
}

// procs are the processes a run started.
type procs []proc

type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *procs) start(ctx context.Context, out, name, bin string, args ...string) (*exec.Cmd, error) {
	logf, err := os.Create(filepath.Join(out, "logs", name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	*p = append(*p, proc{cmd, done})
	return cmd, nil
}

// stop ends the processes: SIGTERM, then SIGKILL after 5 s.
func (p *procs) stop() {
	for _, c := range *p {
		c.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range *p {
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
			c.cmd.Process.Kill()
			<-c.done
		}
	}
	*p = nil
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitTCP(ctx context.Context, addr string) error {
	for i := 0; i < 300; i++ {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("nothing listens on %s after 30 s", addr)
}

func waitHTTP(ctx context.Context, u string) error {
	for i := 0; i < 300; i++ {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.New(u + " is not 200 after 30 s")
}
