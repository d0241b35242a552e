package main

import (
	"context"
	"fmt"
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
		Short: "Check a running server: exit 0 when it is healthy (or ready), 1 when not",
		Long: `Asks a running frond server whether it is alive (GET /healthz) or, with
--ready, ready to serve (GET /readyz, or /readyz/segment and /readyz/snowflake
for one kind of ID). It exits 0 when the server says yes and 1 otherwise,
so it serves as a container's health check: the image needs nothing else.`,
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
		if err := cl.do(ctx, "GET", path, nil, nil); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		fmt.Fprintf(e.stdout, "%s: ok\n", path)
		return nil
	}
	return c
}
