package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/frond-id/frond/internal/secret"
	"github.com/frond-id/frond/internal/suggest"
)

// Exit codes.
const (
	exitOK     = 0
	exitError  = 1 // the command failed: server unreachable, start-up refused, ...
	exitUsage  = 2 // bad command line or input: nothing was sent
	exitServer = 3 // the server answered with an error
)

// exitCodeError is an error with its own exit code.
type exitCodeError struct {
	code int
	err  error
}

func (e exitCodeError) Error() string { return e.err.Error() }
func (e exitCodeError) Unwrap() error { return e.err }

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
		Long: `frond issues unique IDs: segment IDs per business tag (Leaf's segment mode,
and sequence tags for strictly increasing ones), snowflake IDs, UUIDs (v1
to v7, and TypeIDs) and business serial numbers, as numbers or in short or non-guessable
forms; over HTTP (Leaf's and TinyID's APIs, and a JSON API), gRPC and the
Redis protocol, and to Go programs through a client library that leases
segments.

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
	// frond --version prints what frond version prints.
	root.Version = readBuildInfo().Version
	root.SetVersionTemplate(readBuildInfo().text())
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetContext(ctx)
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(newServeCmd(e), newConfigCmd(e), newVersionCmd(e), newIDCmd(e), newTagCmd(e), newSpaceCmd(e), newDecodeCmd(e), newComposeCmd(e), newRevealCmd(e), newBenchCmd(e), newHealthCmd(e), newAuditCmd(e), newStoresCmd(e))
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
		var names []string
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		return usagef("a command is needed after %q: %s (see above)", c.CommandPath(), strings.Join(names, ", "))
	}
}

// flagError is a usage error, with the nearest flag for an unknown one
// ("did you mean --http-addr?").
func flagError(c *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return usageError{err}
	}
	name, _, _ = strings.Cut(name, "=")
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if near, ok := suggest.Nearest(name, names); ok {
		return usagef("%v; did you mean --%s?", err, near)
	}
	return usagef("%v (%s --help lists the flags)", err, c.CommandPath())
}

// args wraps a cobra argument validator so its errors count as usage
// errors, and name the arguments missing ("TAG is missing").
func args(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, a []string) error {
		err := v(c, a)
		if err == nil {
			return nil
		}
		if names := argNames(c.Use); len(a) < len(names) {
			verb := " is"
			if len(names)-len(a) > 1 {
				verb = " are"
			}
			return usagef("%s%s missing (usage: %s)", strings.Join(names[len(a):], " and "), verb, c.UseLine())
		}
		return usagef("%v (usage: %s)", err, c.UseLine())
	}
}

// argNames are the positional arguments a command's Use names: the
// capitalised words that are not a flag's value ("create TAG --step N":
// TAG).
func argNames(use string) []string {
	var out []string
	words := strings.Fields(use)
	for i, w := range words {
		if i == 0 || strings.HasPrefix(words[i-1], "-") || strings.HasPrefix(words[i-1], "[-") || w != strings.ToUpper(w) || !unicode.IsLetter([]rune(w)[0]) {
			continue
		}
		out = append(out, w)
	}
	return out
}

func run(ctx context.Context, argv []string, stdout, stderr io.Writer, environ []string) int {
	root := newRoot(ctx, env{stdout: stdout, stderr: stderr, environ: environ})
	root.SetArgs(argv)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "frond:", secret.Hide(err))
	var ue usageError
	var se *serverError
	var ce exitCodeError
	switch {
	case errors.As(err, &ce):
		return ce.code
	case errors.As(err, &se):
		return exitServer
	case errors.As(err, &ue):
		return exitUsage
	}
	return exitError
}
