package main

import (
	"github.com/frond-id/frond/internal/config"
	"github.com/spf13/cobra"
)

func newConfigCmd(e env) *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration, secrets masked",
		Long: `Print the configuration frond serve would run with: defaults, then the YAML
file (--config or FROND_CONFIG), then FROND_* variables, then flags. The admin
token and passwords in URLs are shown as ***. Unknown keys are errors.`,
		Example: "  frond config\n  FROND_HTTP_ADDR=127.0.0.1:9090 frond config --config /etc/frond.yaml",
		Args:    args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, k, err := config.Load(c.Flags(), e.environ)
			if err != nil {
				return usageError{err}
			}
			out, err := config.Masked(k, cfg)
			if err != nil {
				return err
			}
			_, err = e.stdout.Write(out)
			return err
		},
	}
	config.AddFlags(c.Flags())
	return c
}
