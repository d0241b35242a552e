package resp

import (
	"strings"
	"testing"

	"github.com/frond-id/frond/api"
)

// A sequence tag over RESP: TAG CREATE ... MODE sequence, shown by TAG
// GET, served by INCR one ID after another; the mode cannot be updated.
func TestServer_SequenceTag(t *testing.T) {
	addr, _ := start(t, api.Options{})
	c := dial(t, addr)
	got, err := c.Do(bg, "TAG", "CREATE", "ticket", "STEP", "1", "MODE", "sequence").Slice()
	if err != nil || got[11] != "sequence" {
		t.Fatalf("TAG CREATE: %v, %v", got, err)
	}
	for want := int64(1); want <= 3; want++ {
		if id, err := c.Incr(bg, "ticket").Result(); err != nil || id != want {
			t.Fatalf("INCR: %d, %v; want %d", id, err, want)
		}
	}
	if err := c.Do(bg, "TAG", "UPDATE", "ticket", "MODE", "segment").Err(); err == nil || !strings.HasPrefix(err.Error(), "INVALID_ARGUMENT ") {
		t.Fatalf("TAG UPDATE MODE: %v", err)
	}
	if err := c.Do(bg, "TAG", "CREATE", "x", "STEP", "1", "MODE", "stream").Err(); err == nil || !strings.Contains(err.Error(), "segment or sequence") {
		t.Fatalf("an unknown mode: %v", err)
	}
	if got, err := c.Do(bg, "TAG", "GET", "ticket").Slice(); err != nil || got[3] != int64(4) || got[11] != "sequence" {
		t.Fatalf("TAG GET: %v, %v", got, err)
	}
}
