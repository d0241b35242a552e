package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/frond-id/frond"
	httpapi "github.com/frond-id/frond/api/http"
	"github.com/frond-id/frond/config"
	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/registry"
)

// sequencesStore is the URL of the node's keyed sequence spaces, "" when
// they are off: sequences.store, else the node's store when it is one
// whose scheme keeps keyed sequences (backends: openSections).
func sequencesStore(cfg *config.Config) (string, error) {
	raw := strings.TrimSpace(cfg.Sequences.Store)
	switch raw {
	case "off":
		return "", nil
	case "":
		if len(strings.Fields(cfg.Store)) != 1 {
			return "", nil
		}
		if b, _ := backendOf(cfg.Store); b == nil || !isSections(b) {
			return "", nil
		}
		return cfg.Store, nil
	}
	if b, _ := backendOf(raw); b == nil || !isSections(b) || !strings.Contains(raw, ":") {
		return "", fmt.Errorf("sequences.store %s: a SQL database, Redis or etcd (%s), or off", storeName(raw), schemes(isSections))
	}
	return raw, nil
}

// openSpaces opens the node's keyed sequence spaces (nil when they are
// off). A space is started on this node (its share of the sections taken)
// by its first request here: a node pays nothing for spaces it is never
// asked for, and a restart does not load every space at once. httpAddr is the HTTP listener's: the port of
// the address other nodes forward to, unless sequences.advertise names it.
func openSpaces(ctx context.Context, cfg *config.Config, httpAddr net.Addr, log *slog.Logger) (*keyseq.Spaces, error) {
	raw, err := sequencesStore(cfg)
	if err != nil || raw == "" {
		if err == nil {
			log.Info("keyed sequences off: the store is not one SQL database, Redis or etcd (set sequences.store to serve them)")
		}
		return nil, err
	}
	bk, _ := backendOf(raw) // a scheme that keeps keyed sequences: sequencesStore
	open := func(ctx context.Context) (keyseq.ClosingStore, error) { return bk.openSections(ctx, raw) }
	var st keyseq.ClosingStore
	st, err = open(ctx)
	switch {
	case errors.Is(err, frond.ErrStoreUnavailable):
		// As the segment store: the node serves without it, and keyed
		// sequences once it answers.
		log.Warn("KEYED SEQUENCE STORE DOWN AT START: serving without it and retrying on use", "store", storeName(raw), "err", err)
		st = keyseq.NewLazy(open)
	case err != nil:
		return nil, fmt.Errorf("keyed sequences on %s: %w", storeName(raw), err)
	}
	addr := advertiseAddr(cfg, httpAddr)
	var b [16]byte
	rand.Read(b[:])
	me := keyseq.Owner{Token: hex.EncodeToString(b[:]), Addr: addr}
	tc, err := forwardTLS(cfg)
	if err != nil {
		st.Close()
		return nil, err
	}
	// The floors: the highest maximum this node raised each section to, in
	// its data directory, so that a store that lost data is refused, not
	// served again from below (issue 58).
	floors := keyseq.NewFileFloors(cfg.DataDir)
	sp := keyseq.NewSpaces(st, me, keyseq.NodeOptions{TTL: cfg.Sequences.LeaseTTL, Logger: log, Floors: floors,
		Budget: keyseq.NewBudget(cfg.Sequences.Memory), MaxSpace: cfg.Sequences.MaxSpaceMemory, MaxSpaces: cfg.Sequences.MaxSpaces, MaxSectionReads: cfg.Sequences.MaxSectionReads, IdleAfter: cfg.Sequences.IdleAfter, MinResidency: cfg.Sequences.MinResidency}, httpapi.SeqForwarder(tc, cfg.Sequences.LeaseTTL))
	sp.SetFloorsAsker(httpapi.SeqFloorsAsker(tc, 10*time.Second)) // a re-arm gathers every member's floors
	log.Info("keyed sequences", "store", storeName(raw), "advertise", addr, "lease_ttl", cfg.Sequences.LeaseTTL)
	return sp, nil
}

// advertiseAddr is where the other nodes reach this node's HTTP API:
// sequences.advertise; else the HTTP listener's address when it is bound
// to one (two nodes on 127.0.0.1 reach each other there: issue 58); else
// worker.host (the machine's first address by default) and the port.
func advertiseAddr(cfg *config.Config, httpAddr net.Addr) string {
	if cfg.Sequences.Advertise != "" {
		return cfg.Sequences.Advertise
	}
	if t, ok := httpAddr.(*net.TCPAddr); ok && t.IP != nil && !t.IP.IsUnspecified() {
		return t.String()
	}
	host := cfg.Worker.Host
	if host == "" {
		host = registry.DefaultHost()
	}
	return net.JoinHostPort(host, strconv.Itoa(listenPort(httpAddr)))
}

// checkAdvertise probes, once the HTTP API serves, that the address this
// node advertises for keyed sequences reaches it, and says loudly when it
// does not.
func checkAdvertise(ctx context.Context, cfg *config.Config, spaces *keyseq.Spaces, log *slog.Logger) {
	if spaces == nil {
		return
	}
	tc, err := forwardTLS(cfg)
	if err != nil {
		return // refused at start already
	}
	if err := spaces.CheckAdvertise(ctx, httpapi.ProbeNode(tc), 5); err != nil && ctx.Err() == nil {
		log.Error("KEYED SEQUENCE ADVERTISE ADDRESS DOES NOT REACH THIS NODE: " + err.Error())
		return
	}
	log.Info("keyed sequences: the advertised address reaches this node", "advertise", spaces.Me().Addr)
}

// forwardTLS is the TLS of requests forwarded to other nodes: nil without
// TLS; with it, the peers' certificates verified with the system's roots
// and tls.client_ca_file, and this node's own certificate presented (for
// peers that require client certificates).
func forwardTLS(cfg *config.Config) (*tls.Config, error) {
	if !cfg.TLS.On() {
		return nil, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if cfg.TLS.ClientCAFile != "" {
		pem, err := os.ReadFile(cfg.TLS.ClientCAFile)
		if err != nil {
			return nil, err
		}
		pool.AppendCertsFromPEM(pem)
	}
	tc := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cert, err := tls.LoadX509KeyPair(cfg.TLS.CertFile, cfg.TLS.KeyFile); err == nil {
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
