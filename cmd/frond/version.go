package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set at build time by scripts/build.sh:
//
//	go build -ldflags "-X main.version=v1.2.3 -X main.commit=<sha> -X main.date=<RFC 3339>"
//
// Without them (go build, go install), the commit and its time come from the
// build information Go records from the version control checkout.
var (
	version = "dev"
	commit  = ""
	date    = ""
)

// buildInfo is what frond version prints.
type buildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Date     string `json:"date"`
	Modified bool   `json:"modified,omitempty"` // built from a checkout with uncommitted changes
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Commit: commit, Date: date, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version // go install github.com/frond-id/frond/cmd/frond@v1.2.3
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && b.Commit == "":
				b.Commit = s.Value
			case s.Key == "vcs.time" && b.Date == "":
				b.Date = s.Value
			case s.Key == "vcs.modified" && commit == "":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	if b.Date == "" {
		b.Date = "unknown"
	}
	return b
}

// text is frond version's output (and frond --version's).
func (b buildInfo) text() string {
	mod := ""
	if b.Modified {
		mod = " (modified)"
	}
	return fmt.Sprintf("frond %s\ncommit    %s%s\nbuilt     %s\ngo        %s %s\n", b.Version, b.Commit, mod, b.Date, b.Go, b.Platform)
}

func newVersionCmd(e env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date",
		Long: `Prints frond's version, the commit it was built from and the commit's date
(the build date of a reproducible build: scripts/release.sh), the Go version
and the platform.`,
		Example: "  frond version\n  frond version --json",
		Args:    args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			b := readBuildInfo()
			if asJSON {
				enc := json.NewEncoder(e.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(b)
			}
			_, err := fmt.Fprint(e.stdout, b.text())
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
