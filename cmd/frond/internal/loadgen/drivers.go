package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/frond-id/frond/client"
	"github.com/frond-id/frond/idfmt"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

// codedError is an error answer with frond's stable code.
type codedError struct{ code, msg string }

func (e *codedError) Error() string { return e.code + ": " + e.msg }

// Code is the stable code of an error a request got (tag_not_found), or
// what kind of failure it was: "connection" or "timeout".
func Code(err error) string { return codeOf(err) }

// codeOf is the stable code of an error, or what kind of failure it was.
func codeOf(err error) string {
	var ce *codedError
	var cle *client.Error
	var ne net.Error
	switch {
	case errors.As(err, &ce):
		return ce.code
	case errors.As(err, &cle) && cle.FromServer():
		return cle.Code
	case errors.As(err, &cle) && cle.GRPC == codes.DeadlineExceeded:
		return "timeout"
	case errors.As(err, &cle) && cle.GRPC == codes.Unavailable:
		return "connection"
	case errors.As(err, &cle):
		return cle.Code
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	if st, ok := status.FromError(err); ok {
		for _, d := range st.Details() {
			if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetMetadata()["code"] != "" {
				return info.GetMetadata()["code"]
			}
		}
		switch st.Code() {
		case codes.Unavailable: // without frond's code: grpc-go could not connect
			return "connection"
		case codes.DeadlineExceeded:
			return "timeout"
		}
		return strings.ToLower(st.Code().String())
	}
	return "connection"
}

// newDriver makes the driver of o.Protocol (a variable: tests put in fakes).
var newDriver = func(ctx context.Context, o Options) (driver, error) {
	switch o.Protocol {
	case Leaf, HTTP:
		return newHTTP(o)
	case GRPC:
		return newGRPC(o)
	case RESP:
		return newRESP(o)
	}
	return newClient(o)
}

// httpDriver: Leaf's API (one ID as text) or /v1 (JSON).
type httpDriver struct {
	o    Options
	c    *http.Client
	root string
	urls []string // by tag
}

func newHTTP(o Options) (driver, error) {
	base, err := url.Parse(o.Server)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("server %q: an http:// or https:// URL", o.Server)
	}
	d := &httpDriver{o: o, c: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: o.Connections, MaxIdleConnsPerHost: o.Connections, MaxConnsPerHost: o.Connections, IdleConnTimeout: time.Minute,
		TLSClientConfig: o.TLS, ForceAttemptHTTP2: o.TLS != nil,
	}}}
	root := strings.TrimSuffix(o.Server, "/")
	d.root = root
	query := ""
	if o.Protocol == HTTP && o.Batch > 1 {
		query = "?n=" + strconv.Itoa(o.Batch)
	}
	for i := range o.tagCount() {
		var u string
		switch {
		case o.Protocol == Leaf && o.Kind == Segment:
			u = root + "/api/segment/get/" + url.PathEscape(o.TagName(i))
		case o.Protocol == Leaf:
			u = root + "/api/snowflake/get/bench"
		case o.Kind == Segment:
			u = root + "/v1/segment/" + url.PathEscape(o.TagName(i))
		default:
			u = root + "/v1/snowflake"
		}
		d.urls = append(d.urls, u+query)
	}
	return d, nil
}

func (d *httpDriver) create(ctx context.Context, name string) error {
	body, _ := json.Marshal(map[string]any{"name": name, "step": createStep})
	req, err := http.NewRequestWithContext(ctx, "POST", d.root+"/v1/tags", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if d.o.AdminToken != "" {
		req.Header.Set("Authorization", "Bearer "+d.o.AdminToken)
	}
	resp, err := d.c.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return httpError(resp.StatusCode, b)
	}
	return nil
}

func (d *httpDriver) Close() error { d.c.CloseIdleConnections(); return nil }

func (d *httpDriver) taker(int) taker {
	return func(ctx context.Context, tag int, dst []int64) ([]int64, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", d.urls[tag], nil)
		if err != nil {
			return dst, err
		}
		if d.o.TagToken != "" {
			req.Header.Set("X-Frond-Token", d.o.TagToken)
		}
		resp, err := d.c.Do(req)
		if err != nil {
			return dst, err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		if err != nil {
			return dst, err
		}
		if resp.StatusCode != http.StatusOK {
			return dst, httpError(resp.StatusCode, body)
		}
		if d.o.Protocol == Leaf {
			id, err := strconv.ParseInt(string(bytes.TrimSpace(body)), 10, 64)
			if err != nil {
				return dst, fmt.Errorf("Leaf's API answered %q", body)
			}
			return append(dst, id), nil
		}
		var out struct {
			Form   string   `json:"form"`
			ID     *int64   `json:"id"`
			IDs    []int64  `json:"ids"`
			IDStr  string   `json:"id_str"`
			IDStrs []string `json:"id_strs"`
		}
		if err := json.Unmarshal(body, &out); err != nil {
			return dst, fmt.Errorf("answer %q: %w", body, err)
		}
		switch {
		case out.ID != nil:
			return append(dst, *out.ID), nil
		case len(out.IDs) > 0:
			return append(dst, out.IDs...), nil
		case out.IDStr != "":
			return textIDs(dst, out.Form, out.IDStr)
		case len(out.IDStrs) > 0:
			return textIDs(dst, out.Form, out.IDStrs...)
		}
		return dst, fmt.Errorf("an answer without IDs: %q", body)
	}
}

// textIDs appends IDs answered as text (a tag's configured form,
// docs/kinds.md) as the numbers they encode: for the opaque form the
// permuted number, unique as the IDs under it are. So that every form is
// counted and checked for duplicates; an ID no form here reads is an error.
func textIDs(dst []int64, form string, strs ...string) ([]int64, error) {
	for _, s := range strs {
		enc := idfmt.Base62 // base62 and opaque62
		switch form {
		case "base32":
			enc = idfmt.Base32
		case "base62", "opaque62":
		case "": // RESP says no form: base32 is 13 characters, base62 11 at most
			if len(s) == idfmt.Base32.Width() {
				enc = idfmt.Base32
			}
		default:
			return dst, fmt.Errorf("IDs in form %q: frond bench cannot read them", form)
		}
		id, err := enc.Decode(s)
		if err != nil {
			return dst, fmt.Errorf("ID %q in form %q: %w", s, form, err)
		}
		dst = append(dst, id)
	}
	return dst, nil
}

// httpError reads frond's code from an error answer: the JSON error of
// /v1, or Leaf's "error: code: message".
func httpError(status int, body []byte) error {
	var eb struct {
		Error struct{ Code, Message string }
	}
	if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
		return &codedError{eb.Error.Code, eb.Error.Message}
	}
	if rest, ok := strings.CutPrefix(string(body), "error: "); ok {
		code, msg, _ := strings.Cut(rest, ": ")
		return &codedError{code, strings.TrimSpace(msg)}
	}
	return &codedError{"http_" + strconv.Itoa(status), strings.TrimSpace(string(body))}
}

type grpcDriver struct {
	o     Options
	conns []*grpc.ClientConn
	ids   []frondv1.IDServiceClient
}

func newGRPC(o Options) (driver, error) {
	d := &grpcDriver{o: o}
	for range o.Connections {
		// Each connection its own: grpc.NewClient shares nothing between them.
		creds := insecure.NewCredentials()
		if o.TLS != nil {
			creds = credentials.NewTLS(o.TLS)
		}
		cc, err := grpc.NewClient(o.Server, grpc.WithTransportCredentials(creds))
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("server %q: %w", o.Server, err)
		}
		d.conns = append(d.conns, cc)
		d.ids = append(d.ids, frondv1.NewIDServiceClient(cc))
	}
	return d, nil
}

func (d *grpcDriver) Close() error {
	for _, c := range d.conns {
		c.Close()
	}
	return nil
}

func (d *grpcDriver) create(ctx context.Context, name string) error {
	if d.o.AdminToken != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+d.o.AdminToken)
	}
	step := int64(createStep)
	_, err := d.ids[0].CreateTag(ctx, &frondv1.CreateTagRequest{Name: name, Step: &step})
	return err
}

func (d *grpcDriver) taker(worker int) taker {
	c := d.ids[worker%len(d.ids)]
	n := int64(d.o.Batch)
	return func(ctx context.Context, tag int, dst []int64) ([]int64, error) {
		var out *frondv1.IDs
		var err error
		if d.o.Kind == Segment {
			if d.o.TagToken != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "x-frond-token", d.o.TagToken)
			}
			out, err = c.NextSegment(ctx, &frondv1.NextSegmentRequest{Tag: d.o.TagName(tag), N: n})
		} else {
			out, err = c.NextSnowflake(ctx, &frondv1.NextSnowflakeRequest{N: n})
		}
		if err != nil {
			return dst, err
		}
		if len(out.GetIds()) == 0 && len(out.GetIdStrs()) > 0 {
			return textIDs(dst, out.GetForm(), out.GetIdStrs()...)
		}
		return append(dst, out.GetIds()...), nil
	}
}

type respDriver struct {
	o Options
	c *redis.Client
}

// quietRedis drops go-redis's own log lines: a pool of 32 connections to
// a server that is not there logged 32 "failed to dial" lines before the
// one error frond bench reports.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func newRESP(o Options) (driver, error) {
	if _, _, err := net.SplitHostPort(o.Server); err != nil {
		return nil, fmt.Errorf("server %q: host:port", o.Server)
	}
	redis.SetLogger(quietRedis{})
	opts := &redis.Options{Addr: o.Server, Protocol: 2, PoolSize: o.Connections, MinIdleConns: o.Connections, DisableIdentity: true,
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, TLSConfig: o.TLS}
	if o.TagToken != "" {
		token := o.TagToken
		opts.OnConnect = func(ctx context.Context, cn *redis.Conn) error { return cn.Do(ctx, "TOKEN", token).Err() }
	}
	return &respDriver{o: o, c: redis.NewClient(opts)}, nil
}

func (d *respDriver) Close() error { return d.c.Close() }

// respError is frond's code of a RESP error reply ("TAG_EXISTS message").
func respError(err error) error {
	var re redis.Error
	if errors.As(err, &re) {
		code, msg, _ := strings.Cut(re.Error(), " ")
		return &codedError{strings.ToLower(code), msg}
	}
	return err
}

func (d *respDriver) create(ctx context.Context, name string) error {
	c := d.c.Conn()
	defer c.Close()
	if d.o.AdminToken != "" {
		if err := c.Do(ctx, "AUTH", d.o.AdminToken).Err(); err != nil {
			return respError(err)
		}
	}
	return respError(c.Do(ctx, "TAG", "CREATE", name, "STEP", createStep).Err())
}

func (d *respDriver) taker(int) taker {
	args := make([][]any, d.o.tagCount())
	for i := range args {
		switch {
		case d.o.Kind == Segment && d.o.Batch == 1:
			// Not INCR: it answers integers, and a tag with a text form
			// (docs/kinds.md#forms-across-protocols) refuses it.
			args[i] = []any{"SEGMENT", d.o.TagName(i)}
		case d.o.Kind == Segment:
			args[i] = []any{"SEGMENT", d.o.TagName(i), "COUNT", d.o.Batch}
		case d.o.Batch == 1:
			args[i] = []any{"SNOWFLAKE"}
		default:
			args[i] = []any{"SNOWFLAKE", "COUNT", d.o.Batch}
		}
	}
	return func(ctx context.Context, tag int, dst []int64) ([]int64, error) {
		v, err := d.c.Do(ctx, args[tag]...).Result()
		if err != nil {
			return dst, respError(err)
		}
		switch v := v.(type) {
		case int64:
			return append(dst, v), nil
		case string:
			return textIDs(dst, "", v)
		case []any:
			for _, x := range v {
				switch id := x.(type) {
				case int64:
					dst = append(dst, id)
				case string:
					if dst, err = textIDs(dst, "", id); err != nil {
						return dst, err
					}
				default:
					return dst, fmt.Errorf("an ID %v", x)
				}
			}
			return dst, nil
		}
		return dst, fmt.Errorf("answer %v", v)
	}
}

// clientDriver is the Go client library: segment IDs from its leases.
type clientDriver struct {
	o       Options
	c       *client.Client
	once    sync.Once
	tags    []*client.Tag // by tag, shared by the workers
	tagErrs []error
}

func newClient(o Options) (driver, error) {
	c, err := client.New(client.Options{Servers: strings.Split(o.Server, ","), Token: o.TagToken, TLS: o.TLS})
	if err != nil {
		return nil, err
	}
	return &clientDriver{o: o, c: c}, nil
}

func (d *clientDriver) Close() error { return d.c.Close() }

func (d *clientDriver) leases() Leases {
	var l Leases
	for _, t := range d.c.Stats().Tags {
		l.Taken += t.Loads
		l.Waits += t.Waits
		l.Step = max(l.Step, t.Step)
	}
	return l
}

func (d *clientDriver) create(context.Context, string) error {
	return errors.New("the Go client does not administer tags: create them with --protocol http, grpc or resp, or frond tag create")
}

func (d *clientDriver) taker(int) taker {
	if d.o.Kind == Snowflake {
		return func(ctx context.Context, _ int, dst []int64) ([]int64, error) {
			ids, err := d.c.Snowflake(ctx, d.o.Batch)
			return append(dst, ids...), err
		}
	}
	d.once.Do(func() {
		for i := range d.o.tagCount() {
			t, err := d.c.Tag(d.o.TagName(i))
			d.tags, d.tagErrs = append(d.tags, t), append(d.tagErrs, err)
		}
	})
	n := int64(d.o.Batch)
	return func(ctx context.Context, i int, dst []int64) ([]int64, error) {
		tag, tagErr := d.tags[i], d.tagErrs[i]
		if tagErr != nil {
			return dst, tagErr
		}
		if n == 1 {
			id, err := tag.Next(ctx)
			if err != nil {
				return dst, err
			}
			return append(dst, id), nil
		}
		rs, err := tag.NextRanges(ctx, n)
		for _, r := range rs {
			dst = r.Append(dst)
		}
		return dst, err
	}
}
