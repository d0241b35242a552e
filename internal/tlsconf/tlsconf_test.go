package tlsconf

import (
	"bytes"
	"crypto/x509"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond/internal/tlsconf/tlstest"
)

func serial(t *testing.T, r *Reloader) int64 {
	t.Helper()
	c, err := r.Certificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.SerialNumber.Int64()
}

// A rotated certificate is served from the next handshake a second later;
// a broken one keeps the previous one.
func TestReloader(t *testing.T) {
	dir := t.TempDir()
	f := tlstest.Write(t, dir, 100)
	r, err := New(Files{Cert: f.Cert, Key: f.Key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	r.now = func() time.Time { return now }
	if s := serial(t, r); s != 101 {
		t.Fatalf("serial %d", s)
	}
	// Rotate: a new certificate in the same files, with a later mtime.
	cert, key := f.Issue(t, "rotated", 200, x509.ExtKeyUsageServerAuth)
	for _, p := range [][2]string{{cert, f.Cert}, {key, f.Key}} {
		b, _ := os.ReadFile(p[0])
		os.WriteFile(p[1], b, 0o600)
		os.Chtimes(p[1], now.Add(time.Minute), now.Add(time.Minute))
	}
	if s := serial(t, r); s != 101 {
		t.Fatalf("reloaded within the second: %d", s)
	}
	now = now.Add(2 * time.Second)
	if s := serial(t, r); s != 200 {
		t.Fatalf("after rotation: serial %d, want 200", s)
	}
	os.WriteFile(f.Cert, []byte("not a certificate"), 0o600)
	os.Chtimes(f.Cert, now.Add(2*time.Minute), now.Add(2*time.Minute))
	now = now.Add(2 * time.Second)
	if s := serial(t, r); s != 200 {
		t.Fatalf("a broken file replaced the certificate: %d", s)
	}
	if _, err := New(Files{Cert: f.Cert, Key: f.Key}, nil); err == nil {
		t.Fatal("New took a broken certificate")
	}
	if _, err := CertPool(f.Key); err == nil {
		t.Fatal("a key file made a CA pool")
	}
}

// A certificate that is expired, not yet valid or about to expire is said
// in the log at start and at each reload: an expired one started without a
// word (issue 29, item 15).
func TestReloader_Validity(t *testing.T) {
	f := tlstest.Write(t, t.TempDir(), 300) // valid for 24 hours
	var logs bytes.Buffer
	r, err := New(Files{Cert: f.Cert, Key: f.Key}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "expires soon") {
		t.Fatalf("a certificate valid for a day: %s", logs.String())
	}
	c, _ := r.Certificate(nil)
	for _, at := range []struct {
		now  time.Time
		want string
	}{{time.Now().Add(48 * time.Hour), "TLS CERTIFICATE EXPIRED"}, {time.Now().Add(-48 * time.Hour), "not valid yet"}} {
		logs.Reset()
		r.now = func() time.Time { return at.now }
		r.checkValidity(c.Leaf)
		if !strings.Contains(logs.String(), at.want) {
			t.Errorf("at %v: %q, want %q", at.now, logs.String(), at.want)
		}
	}
}
