package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK     = 0
	exitError  = 1 // the command failed: server unreachable, start-up refused, ...
	exitUsage  = 2 // bad command line or input: nothing was sent
	exitServer = 3 // the server answered with an error
)

// usageError marks a bad command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// env is the process environment, passed in so tests control it.
type env struct {
	stdout, stderr io.Writer
	environ        []string
}

func (e env) get(name string) string {
	for _, kv := range e.environ {
		if len(kv) > len(name) && kv[:len(name)] == name && kv[len(name)] == '=' {
			return kv[len(name)+1:]
		}
	}
	return ""
}

func newRoot(ctx context.Context, e env) *cobra.Command {
	root := &cobra.Command{
		Use:   "frond",
		Short: "frond: a distributed unique-ID service",
		Long: `frond issues unique IDs: segment IDs per business tag (Leaf's segment mode)
and snowflake IDs, over a Leaf-compatible HTTP API and a JSON API.

Run the server with "frond serve"; the other commands talk to a running
server (--server, default http://127.0.0.1:8080) or work offline (decode).

Exit codes: 0 success, 1 failure (server unreachable, start-up refused),
2 usage error (command line or configuration), 3 the server answered with
an error.`,
		Example: `  frond serve
  frond tag create order --step 1000
  frond id segment order -n 5
  frond decode 2124376161118060544`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetContext(ctx)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newServeCmd(e), newConfigCmd(e), newVersionCmd(e), newIDCmd(e), newTagCmd(e), newDecodeCmd(e), newRevealCmd(e), newBenchCmd(e), newHealthCmd(e), newAuditCmd(e), newStoresCmd(e))
	requireSubcommand(root, e)
	return root
}

// requireSubcommand makes c and every command below it that only groups
// subcommands (frond, frond id, frond tag) refuse to run without one: they
// print their help to stderr and exit 2, as for an unknown subcommand.
func requireSubcommand(c *cobra.Command, e env) {
	for _, sub := range c.Commands() {
		requireSubcommand(sub, e)
	}
	if !c.HasSubCommands() || c.RunE != nil || c.Run != nil {
		return
	}
	c.SuggestionsMinimumDistance = 2
	c.Args = func(c *cobra.Command, a []string) error {
		if len(a) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", a[0], c.CommandPath())
		if s := c.SuggestionsFor(a[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return usageError{errors.New(msg)}
	}
	c.RunE = func(c *cobra.Command, _ []string) error {
		c.SetOut(e.stderr)
		c.Help()
		return usagef("%s needs a command (listed above)", c.CommandPath())
	}
}

// args wraps a cobra argument validator so its errors count as usage errors.
func args(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, a []string) error {
		if err := v(c, a); err != nil {
			return usageError{err}
		}
		return nil
	}
}

func run(ctx context.Context, argv []string, stdout, stderr io.Writer, environ []string) int {
	root := newRoot(ctx, env{stdout: stdout, stderr: stderr, environ: environ})
	root.SetArgs(argv)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "frond:", err)
	var ue usageError
	var se *serverError
	switch {
	case errors.As(err, &se):
		return exitServer
	case errors.As(err, &ue):
		return exitUsage
	}
	return exitError
}
