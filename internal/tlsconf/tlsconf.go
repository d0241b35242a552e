// Package tlsconf builds the TLS configuration of frond's listeners from
// certificate and key files, and reloads them when they change, so that a
// certificate is rotated without a restart.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// checkEvery is how often a handshake looks at the files again.
const checkEvery = time.Second

// Files are a listener's TLS files.
type Files struct {
	Cert, Key string
	// ClientCA, when set, makes the listener ask every client for a
	// certificate signed by one of its CAs (mutual TLS).
	ClientCA string
}

// Reloader serves the certificate of Files, reading the files again when
// their modification time changes (looked at on a handshake at most every
// checkEvery). A reload that fails keeps the previous certificate and logs.
type Reloader struct {
	f       Files
	log     *slog.Logger
	cert    atomic.Pointer[tls.Certificate]
	mu      sync.Mutex
	checked time.Time
	mod     [2]time.Time // of Cert and Key
	now     func() time.Time
}

// New reads the files; it fails when they cannot be read or do not make a
// certificate.
func New(f Files, log *slog.Logger) (*Reloader, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{f: f, log: log, now: time.Now}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Reloader) load() error {
	var mod [2]time.Time
	for i, p := range []string{r.f.Cert, r.f.Key} {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("tls: %w", err)
		}
		mod[i] = st.ModTime()
	}
	c, err := tls.LoadX509KeyPair(r.f.Cert, r.f.Key)
	if err != nil {
		return fmt.Errorf("tls: certificate %s, key %s: %w", r.f.Cert, r.f.Key, err)
	}
	r.cert.Store(&c)
	r.mod = mod
	r.checkValidity(c.Leaf)
	return nil
}

// expiresSoon is how long before its end a certificate is warned about.
const expiresSoon = 14 * 24 * time.Hour

// checkValidity says in the log when the certificate is expired, not yet
// valid or about to expire: clients refuse such a certificate, and a node
// that starts with one would otherwise look healthy.
func (r *Reloader) checkValidity(leaf *x509.Certificate) {
	if leaf == nil {
		return
	}
	now := r.now()
	switch {
	case now.After(leaf.NotAfter):
		r.log.Error("TLS CERTIFICATE EXPIRED: clients will refuse it; replace the files (they are reloaded without a restart)",
			"cert", r.f.Cert, "not_after", leaf.NotAfter.UTC(), "expired_for", now.Sub(leaf.NotAfter).Round(time.Second).String())
	case now.Before(leaf.NotBefore):
		r.log.Error("TLS certificate not valid yet: clients will refuse it until then", "cert", r.f.Cert, "not_before", leaf.NotBefore.UTC())
	case leaf.NotAfter.Sub(now) < expiresSoon:
		r.log.Warn("TLS certificate expires soon", "cert", r.f.Cert, "not_after", leaf.NotAfter.UTC(), "left", leaf.NotAfter.Sub(now).Round(time.Minute).String())
	}
}

// Certificate is tls.Config.GetCertificate.
func (r *Reloader) Certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	if now := r.now(); now.Sub(r.checked) >= checkEvery {
		r.checked = now
		if r.changed() {
			if err := r.load(); err != nil {
				r.log.Warn("TLS certificate not reloaded: serving the previous one", "err", err)
			} else {
				r.log.Info("TLS certificate reloaded", "cert", r.f.Cert)
			}
		}
	}
	r.mu.Unlock()
	return r.cert.Load(), nil
}

func (r *Reloader) changed() bool {
	for i, p := range []string{r.f.Cert, r.f.Key} {
		st, err := os.Stat(p)
		if err != nil || !st.ModTime().Equal(r.mod[i]) {
			return true
		}
	}
	return false
}

// Config returns the server configuration: TLS 1.2 or later, the reloaded
// certificate, and with ClientCA a required, verified client certificate.
// nextProtos are the application protocols (ALPN) the listener speaks.
func (r *Reloader) Config(nextProtos ...string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.Certificate, NextProtos: nextProtos}
	if r.f.ClientCA != "" {
		pool, err := CertPool(r.f.ClientCA)
		if err != nil {
			return nil, err
		}
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}

// CertPool reads a PEM file of CA certificates.
func CertPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("tls: %s holds no PEM certificate", path)
	}
	return pool, nil
}

// ErrIncomplete is a certificate without a key, or the other way round.
var ErrIncomplete = errors.New("a certificate file needs its key file, and a key file its certificate")
