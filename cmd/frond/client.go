package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/tlsconf"
)

const defaultServer = "http://127.0.0.1:8080"

// serverError is an error answer from the server.
type serverError struct {
	status  int
	code    string
	message string
}

func (e *serverError) Error() string {
	if e.status == 0 { // not HTTP: gRPC, RESP
		return fmt.Sprintf("server answered %s: %s", e.code, e.message)
	}
	if e.code == "" {
		return fmt.Sprintf("server answered %d: %s", e.status, e.message)
	}
	return fmt.Sprintf("server answered %d %s: %s", e.status, e.code, e.message)
}

type client struct {
	base                      string
	token                     string
	caFile, certFile, keyFile string
	http                      *http.Client
	tlsOnce                   sync.Once
	tlsErr                    error
}

// addClientFlags adds --server, --token and the TLS files to a client
// command.
func addClientFlags(c *cobra.Command, e env) *client {
	cl := &client{http: &http.Client{Timeout: 30 * time.Second}}
	server := e.get("FROND_SERVER")
	if server == "" {
		server = defaultServer
	}
	c.PersistentFlags().StringVar(&cl.base, "server", server, "frond server: a URL (http:// or https://) or host:port (env FROND_SERVER)")
	c.PersistentFlags().StringVar(&cl.token, "token", e.get("FROND_ADMIN_TOKEN"), "admin token for tag commands (env FROND_ADMIN_TOKEN)")
	c.PersistentFlags().StringVar(&cl.caFile, "ca-file", e.get("FROND_CA_FILE"), "CA certificates (PEM) to trust for an https:// server (env FROND_CA_FILE)")
	c.PersistentFlags().StringVar(&cl.certFile, "cert-file", e.get("FROND_CERT_FILE"), "client certificate (PEM), for servers that ask for one (env FROND_CERT_FILE)")
	c.PersistentFlags().StringVar(&cl.keyFile, "key-file", e.get("FROND_KEY_FILE"), "client certificate's key (PEM) (env FROND_KEY_FILE)")
	return cl
}

// tlsConfig is the client's TLS configuration from --ca-file, --cert-file
// and --key-file; nil when none is given.
func (cl *client) tlsConfig() (*tls.Config, error) {
	if cl.caFile == "" && cl.certFile == "" && cl.keyFile == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if cl.caFile != "" {
		pool, err := tlsconf.CertPool(cl.caFile)
		if err != nil {
			return nil, usageError{err}
		}
		c.RootCAs = pool
	}
	if cl.certFile != "" || cl.keyFile != "" {
		cert, err := tls.LoadX509KeyPair(cl.certFile, cl.keyFile)
		if err != nil {
			return nil, usagef("--cert-file %q, --key-file %q: %v", cl.certFile, cl.keyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// baseURL is --server as a URL: a bare host:port ("localhost:8080", as
// the other tools take it) is http://host:port, or https:// when a TLS
// file is given.
func (cl *client) baseURL() string {
	if strings.Contains(cl.base, "://") {
		return cl.base
	}
	if cl.caFile != "" || cl.certFile != "" || cl.keyFile != "" {
		return "https://" + cl.base
	}
	return "http://" + cl.base
}

// do sends a request and decodes a JSON answer into out (if non-nil).
func (cl *client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	cl.tlsOnce.Do(func() {
		var c *tls.Config
		if c, cl.tlsErr = cl.tlsConfig(); c != nil {
			cl.http.Transport = &http.Transport{TLSClientConfig: c, ForceAttemptHTTP2: true}
		}
	})
	if cl.tlsErr != nil {
		return cl.tlsErr
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(cl.baseURL(), "/")+path, body)
	if err != nil {
		return usagef("server URL %q: %v", cl.base, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cl.token != "" {
		req.Header.Set("Authorization", "Bearer "+cl.token)
	}
	resp, err := cl.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the server at %s (is frond serve running? set --server): %w", cl.base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode >= 400 {
		var eb struct {
			Error struct{ Code, Message string }
		}
		if json.Unmarshal(b, &eb) == nil && eb.Error.Code != "" {
			msg := eb.Error.Message
			if eb.Error.Code == frond.CodeUnauthorized {
				// The server's hint is for HTTP clients (send Authorization:
				// Bearer <token>); the CLI user's way is a flag.
				if before, _, ok := strings.Cut(msg, ": send Authorization"); ok {
					msg = before
				}
				if cl.token == "" {
					msg += ": pass it with --token TOKEN or FROND_ADMIN_TOKEN"
				} else {
					msg += ": the token given (--token or FROND_ADMIN_TOKEN) is not the server's"
				}
			}
			return &serverError{status: resp.StatusCode, code: eb.Error.Code, message: msg}
		}
		return &serverError{status: resp.StatusCode, message: strings.TrimSpace(string(b))}
	}
	if out != nil && len(b) > 0 {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if err := d.Decode(out); err != nil {
			return fmt.Errorf("decode answer: %w", err)
		}
	}
	return nil
}
