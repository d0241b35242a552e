package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// newHealthCmd is the probe of container health checks: an image without a
// shell or curl runs "frond health" against its own server.
func newHealthCmd(e env) *cobra.Command {
	var ready string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "health [--ready[=segment|snowflake]]",
		Short: "Check a running server: exit 0 when it is healthy (or ready), non-zero when not",
		Long: `Asks a running frond server whether it is alive (GET /healthz) or, with
--ready, ready to serve (GET /readyz, or /readyz/segment and /readyz/snowflake
for one kind of ID), and prints the answer: with --ready the failing checks
by name and why. It serves as a container's health check: the image needs
nothing else.

Exit codes:
  0  healthy; with --ready: ready (every check passes, or the kind asked for
     can be served)
  1  not healthy, not ready (no kind of ID can be served, or not the kind
     asked for), or the server cannot be reached
  2  bad command line
  4  with --ready: degraded: a check fails, but some kind of ID is served`,
		Example: `  frond health
  frond health --ready
  frond health --ready=segment --server https://id-1:8080 --ca-file ca.pem`,
		Args: args(cobra.NoArgs),
	}
	cl := addClientFlags(c, e)
	c.Flags().StringVar(&ready, "ready", "", "check readiness: all kinds, or segment or snowflake")
	c.Flags().Lookup("ready").NoOptDefVal = "all"
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "give up after this long")
	c.RunE = func(c *cobra.Command, _ []string) error {
		path := "/healthz"
		switch ready {
		case "":
		case "all":
			path = "/readyz"
		case "segment", "snowflake":
			path = "/readyz/" + ready
		default:
			return usagef("--ready=%q: all, segment or snowflake", ready)
		}
		if timeout <= 0 {
			return usagef("--timeout %s: must be positive", timeout)
		}
		ctx, cancel := context.WithTimeout(c.Context(), timeout)
		defer cancel()
		var body readyBody
		err := cl.do(ctx, "GET", path, nil, &body)
		var se *serverError
		if ready != "" && errors.As(err, &se) && se.status == http.StatusServiceUnavailable &&
			json.Unmarshal([]byte(se.message), &body) == nil && (body.Status != "" || body.Kind != "") {
			err = nil // not ready: said below, with the reasons
		}
		var ue usageError
		if err != nil && !errors.As(err, &ue) {
			return exitCodeError{exitError, fmt.Errorf("%s: %w", path, err)}
		}
		if err != nil {
			return err
		}
		word, failing := body.verdict()
		if ready == "" || word == "ready" {
			fmt.Fprintf(e.stdout, "%s: ok\n", path)
			return nil
		}
		fmt.Fprintf(e.stdout, "%s: %s\n", path, word)
		for _, f := range failing {
			fmt.Fprintf(e.stdout, "  %s\n", f)
		}
		code := exitError
		if word == "degraded" {
			code = exitDegraded
		}
		return exitCodeError{code, fmt.Errorf("%s: %s (%s)", path, word, strings.Join(failing, "; "))}
	}
	return c
}

// exitDegraded is frond health --ready's exit code for a degraded node: a
// check fails, but some kind of ID is served.
const exitDegraded = 4

// readyBody is /readyz's answer, or /readyz/segment's and
// /readyz/snowflake's (Kind, Ready, Detail).
type readyBody struct {
	Status string `json:"status"`
	Checks []struct {
		Name   string `json:"name"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	} `json:"checks"`
	Kind   string `json:"kind"`
	Ready  bool   `json:"ready"`
	Detail string `json:"detail"`
}

// verdict is "ready", "degraded" or "not ready", and the failing checks:
// "name: detail".
func (b *readyBody) verdict() (string, []string) {
	if b.Kind != "" { // one kind
		if b.Ready {
			return "ready", nil
		}
		return "not ready", []string{b.Kind + ": " + b.Detail}
	}
	var failing []string
	for _, c := range b.Checks {
		if !c.OK {
			failing = append(failing, strings.TrimSuffix(c.Name+": "+c.Detail, ": "))
		}
	}
	switch {
	case b.Status == "ready" && len(failing) == 0:
		return "ready", nil
	case b.Status == "not ready":
		return "not ready", failing
	}
	return "degraded", failing
}
