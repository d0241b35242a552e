// Package etcdconn parses frond's etcd URLs and opens clients, for the
// segment store and the worker registry on etcd.
package etcdconn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/frond-id/frond"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// URL is a parsed etcd://host:2379[,host2:2379...][?params] URL.
type URL struct {
	Endpoints []string          // http://host:port
	Params    map[string]string // the query, in order of no importance
	Keys      []string          // the query's keys, in order
}

// Parse parses rawURL; params must be among allowed.
func Parse(rawURL string, allowed ...string) (URL, error) {
	rest, ok := strings.CutPrefix(rawURL, "etcd://")
	if !ok {
		return URL{}, fmt.Errorf("%w: etcd URL %q must start with etcd://", frond.ErrInvalidArgument, rawURL)
	}
	hosts, query, _ := strings.Cut(rest, "?")
	hosts = strings.TrimSuffix(hosts, "/")
	u := URL{Params: map[string]string{}}
	for _, h := range strings.Split(hosts, ",") {
		if h == "" || strings.ContainsAny(h, "/ ") {
			return URL{}, fmt.Errorf("%w: etcd URL %q: bad endpoint %q", frond.ErrInvalidArgument, rawURL, h)
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
			return URL{}, fmt.Errorf("%w: etcd URL parameter %s=%q: unknown parameter", frond.ErrInvalidArgument, k, v)
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

// Client opens a client; it does not wait for the cluster.
func Client(ctx context.Context, endpoints []string, timeout time.Duration) (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          timeout,
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: timeout,
		DialOptions:          []grpc.DialOption{grpc.WithConnectParams(reconnect)},
		Logger:               zap.NewNop(),
		Context:              context.WithoutCancel(ctx),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: etcd %v: %v", frond.ErrStoreUnavailable, endpoints, err)
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
