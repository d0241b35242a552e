package main

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	frondclient "github.com/frond-id/frond/client"
	"github.com/frond-id/frond/internal/tlsconf"
	"github.com/frond-id/frond/internal/tlsconf/tlstest"
)

// TLS on every listener of frond serve: HTTPS (the CLI with --ca-file, and
// plain HTTP refused), gRPC through the Go client, RESP through go-redis;
// then mutual TLS: without a client certificate the handshake fails, with
// one the call succeeds.
func TestE2E_TLS(t *testing.T) {
	dir := t.TempDir()
	f := tlstest.Write(t, dir, 1)
	pool, err := tlsconf.CertPool(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	s := mustStart(t, t.TempDir(), "--tls-cert-file", f.Cert, "--tls-key-file", f.Key,
		"--grpc-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0")
	base := strings.Replace(s.url, "http://", "https://", 1)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	if r, err := http.Get(s.url + "/healthz"); err == nil && r.StatusCode != http.StatusBadRequest {
		t.Fatalf("plain HTTP on a TLS listener: %d", r.StatusCode)
	}
	resp, err := hc.Post(base+"/v1/tags", "application/json", strings.NewReader(`{"name":"order","step":1000}`))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("HTTPS create: %v %v", resp, err)
	}
	resp.Body.Close()
	// The CLI.
	out, err := exec.Command(binary, "id", "segment", "order", "-n", "2", "--server", base, "--ca-file", f.CA).CombinedOutput()
	if err != nil || strings.Join(strings.Fields(string(out)), " ") != "1 2" {
		t.Fatalf("frond id over HTTPS: %v %q", err, out)
	}
	if out, err := exec.Command(binary, "id", "segment", "order", "--server", base).CombinedOutput(); err == nil {
		t.Fatalf("the CLI trusted an unknown CA: %q", out)
	}
	// gRPC through the Go client.
	c, err := frondclient.New(frondclient.Options{Servers: []string{s.listenAddr("gRPC")}, TLS: &tls.Config{RootCAs: pool}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if id, err := c.Next(ctx, "order"); err != nil || id < 3 {
		t.Fatalf("gRPC over TLS: %d, %v", id, err)
	}
	// RESP through go-redis.
	rc := redis.NewClient(&redis.Options{Addr: s.respAddr(), TLSConfig: &tls.Config{RootCAs: pool}, Protocol: 2})
	defer rc.Close()
	if id, err := rc.Incr(ctx, "order").Result(); err != nil || id < 3 {
		t.Fatalf("RESP over TLS: %d, %v", id, err)
	}

	// The real clients: curl and redis-cli, as docs/security.md shows them.
	if out, err := exec.Command("curl", "-fsS", "--cacert", f.CA, base+"/v1/segment/order").CombinedOutput(); err != nil || !strings.Contains(string(out), `"id":`) {
		t.Fatalf("curl over HTTPS: %v %s", err, out)
	}
	if out := redisCLI(t, s.respAddr(), "", "--tls", "--cacert", f.CA, "INCR", "order"); strings.TrimSpace(out) == "" || strings.Contains(out, "ERR") {
		t.Fatalf("redis-cli --tls: %q", out)
	}

	// frond bench over TLS, on every protocol.
	for _, c := range [][]string{
		{"--protocol", "http", "--server", base}, {"--protocol", "grpc", "--server", s.listenAddr("gRPC")},
		{"--protocol", "resp", "--server", s.respAddr()}, {"--protocol", "client", "--server", s.listenAddr("gRPC")},
	} {
		args := append([]string{"bench", "--tag", "order", "--count", "200", "--concurrency", "2", "--warmup", "0s", "--json", "--ca-file", f.CA}, c...)
		if out, err := exec.Command(binary, args...).CombinedOutput(); err != nil || !strings.Contains(string(out), `"duplicates":0`) {
			t.Fatalf("frond %v: %v\n%s", args, err, out)
		}
	}
	if out, err := exec.Command(binary, "bench", "--protocol", "grpc", "--server", s.listenAddr("gRPC"), "--tag", "order", "--count", "10", "--tls").CombinedOutput(); err == nil {
		t.Fatalf("frond bench trusted an unknown CA: %s", out)
	}

	// Mutual TLS.
	m := mustStart(t, t.TempDir(), "--tls-cert-file", f.Cert, "--tls-key-file", f.Key, "--tls-client-ca-file", f.CA)
	mbase := strings.Replace(m.url, "http://", "https://", 1)
	if _, err := hc.Get(mbase + "/healthz"); err == nil {
		t.Fatal("mTLS: a client without a certificate was answered")
	}
	cert, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	mc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}, Timeout: 10 * time.Second}
	resp, err = mc.Get(mbase + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("mTLS with a client certificate: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	out, err = exec.Command(binary, "tag", "list", "--server", mbase, "--ca-file", f.CA, "--cert-file", f.ClientCert, "--key-file", f.ClientKey).CombinedOutput()
	if err != nil {
		t.Fatalf("the CLI with a client certificate: %v %q", err, out)
	}
}
