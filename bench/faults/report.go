package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// printRun prints a run's lines as it ends.
func printRun(w io.Writer, r *runResult) {
	fmt.Fprintf(w, "%s, %s, over %s (runway at the fault's start: %s):\n", r.Store, r.Title, r.Door, runway(r.Horizon))
	for _, t := range r.Targets {
		if t.Failed != "" {
			fmt.Fprintf(w, "  %-14s failed: %s\n", t.Name, t.Failed)
			continue
		}
		fmt.Fprintf(w, "  %-14s quiet p50 %s p99 %s p99.9 %s max %s | fault p50 %s p99 %s p99.9 %s max %s | errors %d (%s), duplicates %d\n",
			t.Name, ms(t.Quiet.P50), ms(t.Quiet.P99), ms(t.Quiet.P999), ms(t.Quiet.Max),
			ms(t.Fault.P50), ms(t.Fault.P99), ms(t.Fault.P999), ms(t.Fault.Max), sum(t.Errors), codes(t.Errors), t.Duplicates)
	}
}

func runway(h float64) string {
	if h < 0 {
		return "not read"
	}
	return fmt.Sprintf("%.0f s", h)
}

func sum(m map[string]int64) (n int64) {
	for _, v := range m {
		n += v
	}
	return n
}

func codes(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(out, ", ")
}

// ms prints microseconds as milliseconds.
func ms(us float64) string {
	switch {
	case us >= 10_000:
		return fmt.Sprintf("%.0f ms", us/1000)
	case us >= 1000:
		return fmt.Sprintf("%.1f ms", us/1000)
	}
	return fmt.Sprintf("%.2f ms", us/1000)
}

func ratio(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// ratios are a's p50, p99 and p99.9 over b's.
func ratios(a, b stats) string {
	return ratio(a.P50, b.P50) + ", " + ratio(a.P99, b.P99) + ", " + ratio(a.P999, b.P999)
}

// summarize writes the tables of docs/benchmarks.md: one row per run and
// service, then the goals.
func summarize(results []*runResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| store | fault | over | service | errors | dup. | p50 quiet, fault | p99 quiet, fault | p99.9 quiet, fault | max (fault) | fault / quiet: p50, p99, p99.9 | / trivial's, fault's seconds: p50, p99, p99.9 | frond's runway |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---:|---:|---|---|---|---:|---|---|---:|\n")
	for _, r := range results {
		trivs := map[string]*target{}
		for _, t := range r.Targets {
			trivs[t.Name] = t
		}
		for _, t := range r.Targets {
			triv := trivs["trivial"] // the trivial server of the target's pass
			if t.Name == "single buffer" {
				triv = trivs["trivial (reference's pass)"]
			}
			if t.Failed != "" {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | bench failed: %s |||||||||\n", r.Store, r.Fault, r.Door, t.Name, t.Failed)
				continue
			}
			vsTriv := "-"
			if triv != nil && !strings.HasPrefix(t.Name, "trivial") {
				vsTriv = ratios(t.Fault, triv.Fault)
			}
			rw := ""
			if t.Name == "frond" {
				rw = runway(r.Horizon)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %d | %s, %s | %s, %s | %s, %s | %s | %s | %s | %s |\n",
				r.Store, r.Fault, r.Door, t.Name, sum(t.Errors), t.Duplicates, ms(t.Quiet.P50), ms(t.Fault.P50),
				ms(t.Quiet.P99), ms(t.Fault.P99), ms(t.Quiet.P999), ms(t.Fault.P999), ms(t.Fault.Max),
				ratios(t.Fault, t.Quiet), vsTriv, rw)
		}
	}
	b.WriteString("\nGoals (frond, Leaf's HTTP API): through a 5 s stop and a 30 s cut, 0 errors and p99.9 within 1.5x of quiet; quiet p99.9 within 1.2x of the trivial server's.\n\n")
	for _, r := range results {
		f := r.Targets[0]
		if f.Failed != "" {
			continue
		}
		if r.Fault == "stop5" || r.Fault == "cut30" {
			ok := sum(f.Errors) == 0 && f.Fault.P999 <= 1.5*f.Quiet.P999
			fmt.Fprintf(&b, "- %s, %s over %s: %d errors, p99.9 %s quiet, %s through it (%s): %s\n", r.Store, r.Fault, r.Door,
				sum(f.Errors), ms(f.Quiet.P999), ms(f.Fault.P999), ratio(f.Fault.P999, f.Quiet.P999), met(ok))
		}
		for _, t := range r.Targets {
			if t.Name == "trivial" && t.Failed == "" {
				fmt.Fprintf(&b, "- %s, %s over %s: quiet p99.9 %s, the trivial server's %s (%s): %s\n", r.Store, r.Fault, r.Door,
					ms(f.Quiet.P999), ms(t.Quiet.P999), ratio(f.Quiet.P999, t.Quiet.P999), met(f.Quiet.P999 <= 1.2*t.Quiet.P999))
			}
		}
	}
	return b.String()
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

// save writes every run so far: runs.json (the timelines, for plot.py).
func save(out string, results []*runResult) error {
	type sec struct {
		T                   int
		Requests, Errors    int64
		P50, P99, P999, Max float64
	}
	type tgt struct {
		*target
		Timeline []sec
	}
	type run struct {
		*runResult
		Targets []tgt
	}
	var all []run
	for _, r := range results {
		x := run{runResult: r}
		for _, t := range r.Targets {
			y := tgt{target: t}
			for _, s := range t.Timeline {
				y.Timeline = append(y.Timeline, sec{s.T, s.Requests, s.Errors, s.P50, s.P99, s.P999, s.Max})
			}
			x.Targets = append(x.Targets, y)
		}
		all = append(all, x)
	}
	b, err := json.MarshalIndent(all, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "runs.json"), b, 0o644)
}
