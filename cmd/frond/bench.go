package main

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/frond-id/frond/cmd/frond/internal/loadgen"
)

// defaultBenchServer is each protocol's address when --server is not given.
var defaultBenchServer = map[string]string{
	loadgen.Leaf: defaultServer, loadgen.HTTP: defaultServer,
	loadgen.GRPC: "127.0.0.1:9090", loadgen.Client: "127.0.0.1:9090", loadgen.RESP: "127.0.0.1:6380",
}

func newBenchCmd(e env) *cobra.Command {
	var o loadgen.Options
	var asJSON, useTLS bool
	var server string
	var tlsFiles client
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure a running frond: IDs/s, latency, errors, duplicates",
		Long: `Take IDs from a running frond server as fast as it gives them (closed loop) or
at a fixed rate (--rate, open loop: latency counts from when each request was
due, so a stall is not hidden), over one protocol, and report IDs and requests
per second, latency percentiles from an HDR histogram, errors by frond's code,
and duplicates among every ID received.

--server is the protocol's address: an http:// URL for leaf and http
(default http://127.0.0.1:8080), host:port for grpc and client
(127.0.0.1:9090) and resp (127.0.0.1:6380). The client protocol is frond's
Go client library, which leases segments and hands IDs out in process.`,
		Example: `  frond bench --protocol grpc --tag order --duration 10s
  frond bench --protocol resp --server 127.0.0.1:6380 --concurrency 32 --batch 100
  frond bench --protocol http --kind snowflake --rate 20000 --duration 30s
  frond bench --protocol leaf --tag order --rate 2000 --duration 60s --timeline
  frond bench --protocol leaf --tag order --count 100000 --json
  frond bench --protocol http --tag tenant --tags 10000 --create-tags --duration 30s
  frond bench --protocol resp --server id-1:6380 --ca-file ca.pem`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			o.Server = server
			if !c.Flags().Changed("server") {
				o.Server = defaultBenchServer[o.Protocol]
				if env := e.get("FROND_SERVER"); env != "" && (o.Protocol == loadgen.Leaf || o.Protocol == loadgen.HTTP) {
					o.Server = env
				}
			}
			if (o.Protocol == loadgen.GRPC || o.Protocol == loadgen.RESP || o.Protocol == loadgen.Client) && strings.Contains(o.Server, "://") {
				u, err := url.Parse(o.Server)
				if err != nil || u.Host == "" {
					return usagef("--server %q: host:port for --protocol %s", o.Server, o.Protocol)
				}
				o.Server = u.Host
			}
			if err := o.Check(); err != nil {
				return usageError{err}
			}
			tc, err := tlsFiles.tlsConfig()
			if err != nil {
				return err
			}
			if tc == nil && (useTLS || strings.HasPrefix(o.Server, "https://")) {
				tc = &tls.Config{MinVersion: tls.VersionTLS12} // the system's roots
			}
			o.TLS = tc
			bar := progress(e.stderr, o, asJSON)
			o.Progress = bar
			res, err := loadgen.Run(c.Context(), o)
			if err != nil && res.Requests == 0 {
				if code := loadgen.Code(err); code != "connection" && code != "timeout" {
					return &serverError{code: code, message: err.Error()} // exit 3: the server answered with an error
				}
				return fmt.Errorf("no answer from %s over %s: %w", o.Server, o.Protocol, err) // exit 1
			}
			if asJSON {
				enc := json.NewEncoder(e.stdout)
				if err := enc.Encode(res); err != nil {
					return err
				}
			} else {
				printResult(e.stdout, o, res)
			}
			if res.Duplicates > 0 {
				return fmt.Errorf("%d duplicate IDs among %d received", res.Duplicates, res.Checked)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&server, "server", "", "the server: http:// URL for leaf and http (default $FROND_SERVER or "+defaultServer+"), host:port for grpc and client (127.0.0.1:9090) and resp (127.0.0.1:6380)")
	f.StringVar(&o.Protocol, "protocol", loadgen.GRPC, "leaf, http, grpc, resp or client (the Go client library)")
	f.StringVar(&o.Kind, "kind", loadgen.Segment, "segment or snowflake")
	f.StringVar(&o.Tag, "tag", "bench", "segment tag (it must exist: frond tag create bench --step 10000)")
	f.StringVar(&o.TagToken, "tag-token", "", "tag token, for servers with tokens: configured")
	f.IntVar(&o.Tags, "tags", 1, "spread the requests over this many tags, TAG-0 to TAG-(N-1), in turn (with --create-tags, created first)")
	f.BoolVar(&o.CreateTags, "create-tags", false, "create the tags first, step 1000 (those that exist are kept); not with --protocol client")
	f.StringVar(&o.AdminToken, "token", e.get("FROND_ADMIN_TOKEN"), "admin token, for --create-tags on a server with one (env FROND_ADMIN_TOKEN)")
	f.StringVar(&o.MetricsURL, "metrics-url", "", "read the server's RSS and the size and time of a scrape from this /metrics after the run (default: the server's /metrics for leaf and http)")
	f.IntVar(&o.Concurrency, "concurrency", 32, "workers sending requests at once")
	f.IntVar(&o.Connections, "connections", 0, "connections the workers share (default: one per worker; 4 for grpc and client)")
	f.DurationVar(&o.Duration, "duration", 0, "how long to measure (default 10s unless --count)")
	f.Int64Var(&o.Count, "count", 0, "requests to measure, instead of a duration")
	f.IntVar(&o.Batch, "batch", 1, "IDs per request (1 to 10,000; Leaf's API: 1)")
	f.Float64Var(&o.Rate, "rate", 0, "requests per second in all: an open loop (default: closed loop, as fast as answered)")
	f.DurationVar(&o.Warmup, "warmup", time.Second, "run this long first without counting (its IDs are checked for duplicates too)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object instead of the summary")
	f.BoolVar(&o.Timeline, "timeline", false, "report every second too: requests, errors, p50, p99, p99.9 and max of those due in it (with --json, each second's histogram too)")
	f.BoolVar(&useTLS, "tls", false, "connect over TLS, trusting the system's roots (implied by --ca-file and by an https:// server)")
	f.StringVar(&tlsFiles.caFile, "ca-file", e.get("FROND_CA_FILE"), "CA certificates (PEM) to trust: TLS on every protocol (env FROND_CA_FILE)")
	f.StringVar(&tlsFiles.certFile, "cert-file", e.get("FROND_CERT_FILE"), "client certificate (PEM), for servers that ask for one (env FROND_CERT_FILE)")
	f.StringVar(&tlsFiles.keyFile, "key-file", e.get("FROND_KEY_FILE"), "client certificate's key (PEM) (env FROND_KEY_FILE)")
	return c
}

// progress shows the run on a terminal as a bar, elsewhere as a line a
// second (never with --json, whose output is for machines).
func progress(w io.Writer, o loadgen.Options, asJSON bool) func(loadgen.Progress) {
	if asJSON {
		return nil
	}
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return func(p loadgen.Progress) {
			phase := "run"
			if p.Warmup {
				phase = "warm-up"
			}
			fmt.Fprintf(w, "%6.1fs %-7s requests %d  IDs %d  errors %d  %.0f requests/s\n",
				p.Elapsed.Seconds(), phase, p.Requests, p.IDs, p.Errors, p.RequestsPerSecond)
		}
	}
	max := int64(-1)
	if o.Count > 0 {
		max = o.Count
	} else if o.Duration > 0 {
		max = int64((o.Warmup + o.Duration) / time.Second)
	}
	bar := progressbar.NewOptions64(max, progressbar.OptionSetWriter(w), progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish(), progressbar.OptionShowElapsedTimeOnFinish())
	return func(p loadgen.Progress) {
		if o.Count > 0 {
			bar.Set64(p.Requests)
		} else {
			bar.Set64(int64(p.Elapsed / time.Second))
		}
		desc := fmt.Sprintf("%.0f req/s, %d IDs, %d errors", p.RequestsPerSecond, p.IDs, p.Errors)
		if p.Warmup {
			desc = "warm-up"
		}
		bar.Describe(desc)
	}
}

func printResult(w io.Writer, o loadgen.Options, r loadgen.Result) {
	what := r.Kind
	if r.Tag != "" {
		what += " " + r.Tag
	}
	if r.Tags > 1 {
		what = fmt.Sprintf("%s over %d tags (%s to %s)", r.Kind, r.Tags, o.TagName(0), o.TagName(r.Tags-1))
	}
	loop := "closed loop"
	if r.Rate > 0 {
		loop = fmt.Sprintf("open loop at %.0f requests/s", r.Rate)
	}
	fmt.Fprintf(w, "frond bench: %s over %s (%s), %d workers, batch %d, %s, %.1fs measured\n",
		what, r.Protocol, o.Server, r.Concurrency, r.Batch, loop, r.Seconds)
	fmt.Fprintf(w, "  IDs         %d (%.0f/s)\n", r.IDs, r.IDsPerSecond)
	fmt.Fprintf(w, "  requests    %d (%.0f/s)\n", r.Requests, r.RequestsPerSecond)
	fmt.Fprintf(w, "  latency     p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n",
		us(r.Latency.P50), us(r.Latency.P90), us(r.Latency.P99), us(r.Latency.P999), us(r.Latency.Max))
	var errs []string
	for _, code := range slices.Sorted(maps.Keys(r.Errors)) {
		errs = append(errs, fmt.Sprintf("%s %d", code, r.Errors[code]))
	}
	if len(errs) == 0 {
		errs = []string{"none"}
	}
	fmt.Fprintf(w, "  errors      %s\n", strings.Join(errs, ", "))
	fmt.Fprintf(w, "  duplicates  %d among %d IDs checked%s\n", r.Duplicates, r.Checked, checkedNote(r))
	if l := r.Leases; l != nil {
		// The client's latencies are its lease's: a few nanoseconds, but
		// for the callers that found both leased ranges used up.
		waits := "no caller waited for one"
		if l.Waits > 0 {
			waits = fmt.Sprintf("callers waited for one %d times (the first call, and whenever both leased ranges were used up): the max latency is such a wait", l.Waits)
			if cpus := runtime.NumCPU(); r.Concurrency > cpus {
				waits += fmt.Sprintf(", longer while %d workers spinning on IDs outnumber the %d cores and the lease's own calls wait for one", r.Concurrency, cpus)
			}
		}
		fmt.Fprintf(w, "  leases      %d taken (up to %d IDs each); %s\n", l.Taken, l.Step, waits)
	}
	if len(r.Timeline) > 0 {
		fmt.Fprintf(w, "  timeline    %-8s %9s %7s %9s %9s %9s %9s\n", "second", "requests", "errors", "p50", "p99", "p99.9", "max")
		for i, s := range r.Timeline {
			fmt.Fprintf(w, "              %-8s %9d %7d %9s %9s %9s %9s\n", fmt.Sprintf("+%d", i), s.Requests, s.Errors,
				us(s.Latency.P50), us(s.Latency.P99), us(s.Latency.P999), us(s.Latency.Max))
		}
	}
	switch srv := r.Server; {
	case srv == nil:
		fmt.Fprintf(w, "  server      size not read (--metrics-url http://HOST:PORT/metrics reads it)\n")
	case srv.Error != "":
		fmt.Fprintf(w, "  server      %s: %s\n", srv.URL, srv.Error)
	default:
		fmt.Fprintf(w, "  server      RSS %.1f MB; /metrics %s in %s\n", float64(srv.RSSBytes)/1e6, bytesOf(srv.MetricsBytes), us(srv.MetricsSeconds*1e6))
	}
}

// checkedNote says why more IDs were checked than measured: those taken
// before the measured run (the first request and the warm-up) are checked
// too.
func checkedNote(r loadgen.Result) string {
	if r.WarmupIDs <= 0 {
		return ""
	}
	return fmt.Sprintf(" (the %d before the measured run too)", r.WarmupIDs)
}

// bytesOf prints a size readably.
func bytesOf(n int64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d bytes", n)
}

// us prints microseconds readably.
func us(v float64) string {
	switch {
	case v >= 1_000_000:
		return fmt.Sprintf("%.2fs", v/1e6)
	case v >= 1000:
		return fmt.Sprintf("%.2fms", v/1000)
	}
	return fmt.Sprintf("%.0fus", v)
}
