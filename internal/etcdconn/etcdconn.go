// Package etcdconn parses frond's etcd URLs and opens clients, for the
// segment store and the worker registry on etcd.
package etcdconn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/secret"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// URL is a parsed etcd://[user:password@]host:2379[,host2:2379...][?params]
// URL.
type URL struct {
	Endpoints []string          // http://host:port, never with the user
	Params    map[string]string // the query, in order of no importance
	Keys      []string          // the query's keys, in order
	// Username and Password authenticate to etcd (its auth); empty: none.
	Username, Password string
	// Secrets are the URL's secrets (secret.Passwords): every error of
	// the client is masked with them before it leaves (Mask).
	Secrets []string
}

// Mask returns err with the URL's secrets masked: the one masking step of
// every error an etcd backend returns (issue 43: the client's errors
// named its endpoints with their password).
func (u URL) Mask(err error) error { return secret.ScrubError(err, u.Secrets...) }

// Parse parses rawURL; params must be among allowed.
func Parse(rawURL string, allowed ...string) (URL, error) {
	shown := secret.URL(rawURL)
	rest, ok := strings.CutPrefix(rawURL, "etcd://")
	if !ok {
		return URL{}, fmt.Errorf("%w: etcd URL %q must start with etcd://", frond.ErrInvalidArgument, shown)
	}
	hosts, query, _ := strings.Cut(rest, "?")
	hosts = strings.TrimSuffix(hosts, "/")
	u := URL{Params: map[string]string{}, Secrets: secret.Passwords(rawURL)}
	if at := strings.LastIndexByte(hosts, '@'); at >= 0 {
		// The user, before the first host: etcd's own authentication,
		// never part of an endpoint (the client names its endpoints in
		// its errors).
		user, pass, _ := strings.Cut(hosts[:at], ":")
		var err1, err2 error
		u.Username, err1 = url.PathUnescape(user)
		u.Password, err2 = url.PathUnescape(pass)
		if err := errors.Join(err1, err2); err != nil || u.Username == "" || strings.Contains(hosts[:at], ",") {
			return URL{}, fmt.Errorf("%w: etcd URL %q: the user before @ must be user:password, percent-encoded", frond.ErrInvalidArgument, shown)
		}
		u.Secrets = append(u.Secrets, pass, u.Password)
		hosts = hosts[at+1:]
	}
	for _, h := range strings.Split(hosts, ",") {
		if h == "" || strings.ContainsAny(h, "/ @") {
			return URL{}, fmt.Errorf("%w: etcd URL %q: bad endpoint %q", frond.ErrInvalidArgument, shown, secret.Scrub(h, u.Secrets...))
		}
		u.Endpoints = append(u.Endpoints, "http://"+h)
	}
	for _, kv := range strings.Split(query, "&") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		known := false
		for _, a := range allowed {
			known = known || a == k
		}
		if !known {
			return URL{}, fmt.Errorf("%w: etcd URL parameter %s=%q: unknown parameter", frond.ErrInvalidArgument, k, secret.Scrub(v, u.Secrets...))
		}
		u.Params[k] = v
		u.Keys = append(u.Keys, k)
	}
	return u, nil
}

// Duration parses a positive duration parameter.
func Duration(k, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err == nil && d <= 0 {
		err = errors.New("must be positive")
	}
	if err != nil {
		return 0, fmt.Errorf("%w: etcd URL parameter %s=%q: %v", frond.ErrInvalidArgument, k, v, err)
	}
	return d, nil
}

// reconnect is how the client comes back after etcd was unreachable: gRPC's
// default backoff grows by 1.6 from 1 s up to 2 minutes, so after ten
// seconds of refused connections the next attempt came up to 6 s after etcd
// was back; capped at 1 s, snowflake IDs and segments resume within about a
// second.
var reconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
	MinConnectTimeout: 5 * time.Second,
}

// Client opens a client of u's endpoints, as u's user; it does not wait
// for the cluster.
func Client(ctx context.Context, u URL, timeout time.Duration) (*clientv3.Client, error) {
	endpoints := u.Endpoints
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		Username:             u.Username,
		Password:             u.Password,
		DialTimeout:          timeout,
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: timeout,
		DialOptions:          []grpc.DialOption{grpc.WithConnectParams(reconnect)},
		Logger:               zap.NewNop(),
		Context:              context.WithoutCancel(ctx),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: etcd %v: %v", frond.ErrStoreUnavailable, endpoints, u.Mask(err))
	}
	return c, nil
}

// CreateOrGet puts value at key if the key does not exist, in one
// transaction, and returns the value the key holds then (value itself when
// it was put now): a record that the first writer makes and every later
// one reads (a store's identity, a registry's layout).
func CreateOrGet(ctx context.Context, c *clientv3.Client, key, value string) (string, error) {
	r, err := c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, value)).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return "", err
	}
	if r.Succeeded {
		return value, nil
	}
	if kvs := r.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		return string(kvs[0].Value), nil
	}
	return "", fmt.Errorf("%s was deleted as it was read", key)
}

// StoreParams are the parameters of frond's data on etcd (the segment
// store, the keyed sequence spaces): frond_prefix (default /frond/),
// frond_timeout (5 s) and frond_retries (100, at least 1: how many times a
// transaction is tried again when another writer changed what it read).
type StoreParams struct {
	Prefix  string
	Timeout time.Duration
	Retries int
}

// ParseStore parses the URL of frond's data on etcd.
func ParseStore(rawURL string) (URL, StoreParams, error) {
	p := StoreParams{Prefix: "/frond/", Timeout: 5 * time.Second, Retries: 100}
	u, err := Parse(rawURL, "frond_prefix", "frond_timeout", "frond_retries")
	if err != nil {
		return u, p, err
	}
	for _, k := range u.Keys {
		v := u.Params[k]
		switch k {
		case "frond_prefix":
			p.Prefix = v
		case "frond_timeout":
			if p.Timeout, err = Duration(k, v); err != nil {
				return u, p, err
			}
		case "frond_retries":
			if p.Retries, err = strconv.Atoi(v); err != nil || p.Retries < 1 {
				return u, p, fmt.Errorf("%w: etcd URL parameter %s=%q: a whole number from 1", frond.ErrInvalidArgument, k, v)
			}
		}
	}
	return u, p, nil
}

// The store's place (frond.Place) is one key ({prefix}place), shared by the
// segment store and the keyed sequence spaces under the same prefix, so
// that a lost-data fence written by either refuses both (issue 68). Its
// absence is the zero Place. Every allocation compares its revision.

// GetPlace reads the place at key, with the key's ModRevision (0: absent).
func GetPlace(ctx context.Context, c *clientv3.Client, key string) (frond.Place, int64, error) {
	r, err := c.Get(ctx, key)
	if err != nil {
		return frond.Place{}, 0, err
	}
	var got string
	var rev int64
	if len(r.Kvs) > 0 {
		got, rev = string(r.Kvs[0].Value), r.Kvs[0].ModRevision
	}
	p, err := frond.ParsePlace(got)
	if err != nil {
		return frond.Place{}, 0, fmt.Errorf("%w: the place recorded in etcd (%s): %v", frond.ErrWrongPlace, key, err)
	}
	return p, rev, nil
}

// SwapPlace sets the place at key to p if it is old now, in a transaction
// conditional on its value (or its absence, for a store alone); ok false
// (and no error) when it is not old.
func SwapPlace(ctx context.Context, c *clientv3.Client, key string, old, p frond.Place) (bool, error) {
	if err := p.Validate(); err != nil {
		return false, err
	}
	cmp := clientv3.Compare(clientv3.Value(key), "=", old.String())
	if old == (frond.Place{}) {
		cmp = clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	}
	put := clientv3.OpPut(key, p.String())
	if p == (frond.Place{}) {
		put = clientv3.OpDelete(key)
	}
	r, err := c.Txn(ctx).If(cmp).Then(put).Commit()
	if err != nil {
		return false, err
	}
	return r.Succeeded, nil
}
