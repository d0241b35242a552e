package worker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond/snowflake"
)

// A layout that runs out within 30 days is refused; one that runs out
// within the warning period fails the layout check (and still issues); the
// presets pass.
func TestLayoutExpiry(t *testing.T) {
	c := newClock()
	now := time.Unix(0, c.Now())
	soon := snowflake.Layout{Name: "soon", Unit: time.Second, TimeBits: 20, NodeBits: 10, SeqBits: 12, Epoch: now.Add(-24 * time.Hour)} // 12 days
	var fe *FieldError
	if err := (Settings{Now: c.Now, Layout: soon}).Validate(); !errors.As(err, &fe) || fe.Field != "Layout" || !errors.Is(err, snowflake.ErrLayoutExpired) {
		t.Fatalf("a layout running out in 11 days: %v", err)
	}
	if _, err := New(bg, &memRegistry{}, Settings{Now: c.Now, Layout: soon}, nil); !errors.As(err, &fe) {
		t.Fatalf("New with a layout running out in 11 days: %v", err)
	}
	near := snowflake.Layout{Name: "near", Unit: time.Second, TimeBits: 23, NodeBits: 10, SeqBits: 12, Epoch: now.Add(-24 * time.Hour)} // 96 days
	layoutCheck := func(w *Issuer) Check {
		for _, ch := range w.Checks() {
			if ch.Name == "layout" {
				return ch
			}
		}
		t.Fatal("no layout check")
		return Check{}
	}
	w, err := New(bg, &memRegistry{id: 7}, Settings{Now: c.Now, PersistEvery: time.Hour, Layout: near}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(bg)
	if ch := layoutCheck(w); ch.OK || !strings.Contains(ch.Detail, "runs out on") {
		t.Fatalf("a layout running out in 95 days: %+v", ch)
	}
	if ready, detail := w.Ready(); !ready {
		t.Fatalf("a layout running out in 95 days does not issue: %s", detail)
	}
	w2, err := New(bg, &memRegistry{id: 7}, Settings{Now: c.Now, PersistEvery: time.Hour, Layout: near, ExpiryWarning: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close(bg)
	if ch := layoutCheck(w2); !ch.OK {
		t.Fatalf("warning off: %+v", ch)
	}
	for _, name := range []string{snowflake.Twitter, "sonyflake", "uid-generator", "javascript"} {
		l, err := snowflake.Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := (Settings{Now: c.Now, Layout: l}).Validate(); err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
	}
}

// Each invalid setting is named, and New refuses it before it touches the
// registry.
func TestSettings_Validate(t *testing.T) {
	if err := (Settings{}).Validate(); err != nil {
		t.Fatalf("zero Settings: %v", err)
	}
	sonyflake, _ := snowflake.Preset(snowflake.Sonyflake)
	for _, tc := range []struct {
		s     Settings
		field string
	}{
		{Settings{PersistEvery: -time.Second}, "PersistEvery"},
		{Settings{RetryEvery: -time.Second}, "RetryEvery"},
		{Settings{MaxLead: -time.Millisecond}, "MaxLead"},
		{Settings{Layout: sonyflake, RandomStart: 200}, "RandomStart"},
		{Settings{Layout: snowflake.Layout{Unit: time.Millisecond, TimeBits: 41, NodeBits: 20, SeqBits: 12}}, "Layout"},
	} {
		var fe *FieldError
		if err := tc.s.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Validate(%+v) = %v; want a *FieldError on %s", tc.s, err, tc.field)
		}
		reg := &memRegistry{id: 7}
		if _, err := New(bg, reg, tc.s, nil); !errors.As(err, &fe) || reg.acquires != 0 {
			t.Errorf("New(%+v) = %v after %d acquisitions; want the *FieldError before any", tc.s, err, reg.acquires)
		}
	}
}

// Info says how far ahead of the clock the registry has recorded a time
// this node may issue up to.
func TestInfo_ReservedAhead(t *testing.T) {
	c := newClock()
	w := newIssuer(t, c, &memRegistry{id: 7})
	if _, err := w.Next(); err != nil {
		t.Fatal(err)
	}
	if ra := w.Info().ReservedAhead; ra != 2*time.Hour {
		t.Fatalf("reserved ahead %v, want 2 x PersistEvery", ra)
	}
}
