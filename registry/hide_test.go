package registry

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/secret"
)

// leakyBackend fails as a client library that names its endpoints with
// their user and password does (etcd's did: issue 43, item 8).
type leakyBackend struct {
	*MemoryBackend
	err error
}

func (b *leakyBackend) Prepare(context.Context) error { return b.err }

func (b *leakyBackend) Warnings() []string { return []string{b.err.Error()} }

// Every error and warning of the Protocol passes through secret.Hide: a
// remembered password never leaves it, whatever the backend wrote.
func TestProtocol_HidesRememberedSecrets(t *testing.T) {
	const pw = "reg-Pw-7f3a"
	secret.Remember(pw)
	leak := errors.New("dial [http://frond:" + pw + "@10.0.0.1:2379]: connection refused")
	m := NewMemoryServer()
	o := Options{}.WithDefaults()
	p := NewProtocol(&leakyBackend{
		MemoryBackend: &MemoryBackend{S: m, Identity: o.Identity(), TTL: o.LeaseTTL},
		err:           frondUnavailable(leak),
	}, o)
	_, err := p.Acquire(context.Background(), 1023)
	if err == nil || strings.Contains(err.Error(), pw) || !strings.Contains(err.Error(), "10.0.0.1:2379") {
		t.Fatalf("Acquire: %v", err)
	}
	if !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("the hidden error no longer says what it is: %v", err)
	}
	if w := strings.Join(p.Warnings(), " "); strings.Contains(w, pw) || w == "" {
		t.Fatalf("Warnings: %q", w)
	}
}

func frondUnavailable(err error) error { return errors.Join(frond.ErrStoreUnavailable, err) }
