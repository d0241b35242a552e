package main

import (
	"fmt"
	"net"

	"github.com/frond-id/frond/config"
	"github.com/frond-id/frond/internal/secret"
	"github.com/frond-id/frond/registry"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/cobra"
)

func newConfigCmd(e env) *cobra.Command {
	var check bool
	c := &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration, secrets masked; or check it",
		Long: `Print the configuration frond serve would run with: defaults, then the YAML
file (--config or FROND_CONFIG), then FROND_* variables, then flags. The admin
token and passwords in URLs are shown as ***. The configuration is validated
as frond serve validates it: an unknown key or an invalid value is an error
(exit 2) naming the key, its environment variable and its flag.

With --check it prints only "configuration OK" (exit 0) or the error (exit 2).
It takes every flag of frond serve, so that it checks a serve command line
as it stands: frond config --check --store ... --grpc-addr :9090.`,
		Example: "  frond config\n  FROND_HTTP_ADDR=127.0.0.1:9090 frond config --config /etc/frond.yaml\n  frond config --check --config /etc/frond.yaml",
		Args:    args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, k, err := loadConfig(c, e)
			if err != nil {
				return err
			}
			if check {
				_, err = fmt.Fprintln(e.stdout, "configuration OK")
				return err
			}
			// The values a node works out at start, shown as it would use
			// them: the address and port it registers under.
			if cfg.Worker.Host == "" {
				k.Set("worker.host", registry.DefaultHost())
			}
			if cfg.Worker.Port == 0 {
				if _, port, err := net.SplitHostPort(cfg.HTTPAddr); err == nil {
					k.Set("worker.port", port)
				}
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
	c.Flags().BoolVar(&check, "check", false, `validate only: print "configuration OK" or the error`)
	return c
}

// loadConfig reads the configuration as frond serve does (defaults, the
// YAML file, FROND_* variables, flags), validated, with the store and
// registry URLs checked: what serve, config and audit start from.
func loadConfig(c *cobra.Command, e env) (*config.Config, *koanf.Koanf, error) {
	cfg, k, err := config.Load(c.Flags(), e.environ)
	if err != nil {
		return nil, nil, usageError{err}
	}
	// From here on no error or log line shows a configured secret, whoever
	// wrote it (a driver, a client library, frond).
	secret.Remember(cfg.Secrets()...)
	if err := checkBackends(cfg); err != nil {
		return nil, nil, err
	}
	return cfg, k, nil
}
