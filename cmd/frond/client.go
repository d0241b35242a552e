package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
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
	base  string
	token string
	http  *http.Client
}

// addClientFlags adds --server and --token to a client command.
func addClientFlags(c *cobra.Command, e env) *client {
	cl := &client{http: &http.Client{Timeout: 30 * time.Second}}
	server := e.get("FROND_SERVER")
	if server == "" {
		server = defaultServer
	}
	c.PersistentFlags().StringVar(&cl.base, "server", server, "frond server URL (env FROND_SERVER)")
	c.PersistentFlags().StringVar(&cl.token, "token", e.get("FROND_ADMIN_TOKEN"), "admin token for tag commands (env FROND_ADMIN_TOKEN)")
	return cl
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
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(cl.base, "/")+path, body)
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
			return &serverError{status: resp.StatusCode, code: eb.Error.Code, message: eb.Error.Message}
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
