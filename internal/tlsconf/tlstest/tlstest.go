// Package tlstest writes a throwaway CA and certificates signed by it, for
// tests of frond's TLS listeners.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Files are the PEM files Write made.
type Files struct {
	CA                    string // the CA certificate
	Cert, Key             string // a server certificate for 127.0.0.1 and localhost
	ClientCert, ClientKey string // a client certificate
	CAKey                 *ecdsa.PrivateKey
	CACert                *x509.Certificate
	Dir                   string
}

// Write makes a CA and a server and a client certificate signed by it in
// dir; serial numbers count up from first.
func Write(t testing.TB, dir string, first int64) Files {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(first), Subject: pkix.Name{CommonName: "frond test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	f := Files{Dir: dir, CAKey: caKey, CACert: ca, CA: filepath.Join(dir, "ca.pem")}
	writePEM(t, f.CA, "CERTIFICATE", caDER)
	f.Cert, f.Key = f.Issue(t, "server", first+1, x509.ExtKeyUsageServerAuth)
	f.ClientCert, f.ClientKey = f.Issue(t, "client", first+2, x509.ExtKeyUsageClientAuth)
	return f
}

// Issue writes a certificate of name signed by the CA and returns its
// certificate and key files.
func (f Files) Issue(t testing.TB, name string, serial int64, usage x509.ExtKeyUsage) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, f.CACert, &key.PublicKey, f.CAKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, keyFile := filepath.Join(f.Dir, name+".pem"), filepath.Join(f.Dir, name+"-key.pem")
	writePEM(t, cert, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", kb)
	return cert, keyFile
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
