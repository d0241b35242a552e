// Package httpsource is a frond.IDSource over frond's JSON API: one HTTP
// request per call (a batch for NextN), no lease, nothing but the standard
// library. It is for services that cannot hold a lease or speak gRPC; the
// Go client (package client) is the fast one, at memory speed.
package httpsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frond-id/frond"
)

// Client asks a frond server for IDs over HTTP.
type Client struct {
	base  string
	token string
	http  *http.Client
	// text: the paths answered in a text form (a tag's configured form):
	// refused here from then on, without a request that would take IDs
	// only to throw them away.
	text sync.Map // path -> form
}

// Options configure a Client.
type Options struct {
	// Token is the tag token, when the server has tokens (X-Frond-Token).
	Token string
	// HTTP is the client to send with (TLS, proxies, timeouts); nil: one
	// with a 10 s timeout.
	HTTP *http.Client
}

// New returns a Client of the server at base ("http://id-1:8080").
func New(base string, o Options) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: server %q: an http:// or https:// URL", frond.ErrInvalidArgument, base)
	}
	hc := o.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	return &Client{base: strings.TrimSuffix(base, "/"), token: o.Token, http: hc}, nil
}

var _ frond.IDSource = (*Client)(nil)

// Next is the next segment ID of tag.
func (c *Client) Next(ctx context.Context, tag string) (int64, error) {
	ids, err := c.NextN(ctx, tag, 1)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// NextN is n segment IDs of tag in one request (at most 10,000).
func (c *Client) NextN(ctx context.Context, tag string, n int) ([]int64, error) {
	if err := frond.ValidateTagName(tag); err != nil {
		return nil, err
	}
	return c.get(ctx, "/v1/segment/"+url.PathEscape(tag), n)
}

// Snowflake is n snowflake IDs in one request (at most 10,000).
func (c *Client) Snowflake(ctx context.Context, n int) ([]int64, error) {
	return c.get(ctx, "/v1/snowflake", n)
}

// Error is a server's error answer: frond's stable code and its message.
// It unwraps to the code's sentinel (frond.ErrTagNotFound, ...).
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Unwrap is the sentinel of the code (frond.ErrorCode.Err).
func (e *Error) Unwrap() error {
	if c, ok := frond.LookupCode(e.Code); ok {
		return c.Err
	}
	return nil
}

func (c *Client) get(ctx context.Context, path string, n int) ([]int64, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: n %d: at least 1", frond.ErrInvalidArgument, n)
	}
	if form, ok := c.text.Load(path); ok {
		return nil, textForm(form)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path+"?n="+strconv.Itoa(n), nil)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("X-Frond-Token", c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", frond.ErrStoreUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: read the answer: %w", frond.ErrStoreUnavailable, err)
	}
	if resp.StatusCode != http.StatusOK {
		var eb struct {
			Error struct{ Code, Message string }
		}
		if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
			return nil, &Error{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
		}
		return nil, &Error{Status: resp.StatusCode, Code: "http_" + strconv.Itoa(resp.StatusCode), Message: strings.TrimSpace(string(body))}
	}
	var out struct {
		Form   string   `json:"form"`
		ID     *int64   `json:"id"`
		IDs    []int64  `json:"ids"`
		IDStr  string   `json:"id_str"`
		IDStrs []string `json:"id_strs"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("answer %q: %w", body, err)
	}
	ids := out.IDs
	if out.ID != nil {
		ids = []int64{*out.ID}
	}
	if len(ids) == 0 && (out.IDStr != "" || len(out.IDStrs) > 0) {
		// A tag whose configured form is text (docs/kinds.md#forms-across-protocols).
		c.text.Store(path, out.Form)
		return nil, textForm(out.Form)
	}
	if len(ids) != n {
		return nil, errors.New("httpsource: the server answered " + strconv.Itoa(len(ids)) + " IDs of " + strconv.Itoa(n))
	}
	return ids, nil
}

func textForm(form any) error {
	return fmt.Errorf("%w: the IDs come in form %q, text: an IDSource answers numbers (until this client is made again)", frond.ErrFormNotCarried, form)
}
