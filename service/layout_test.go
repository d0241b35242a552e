package service

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond/snowflake"
)

// A layout that runs out within 30 days is refused; one that runs out
// within the warning period fails /readyz's layout check; the presets pass.
func TestLayoutExpiry(t *testing.T) {
	c := newClock()
	now := time.Unix(0, c.Now())
	soon := snowflake.Layout{Name: "soon", Unit: time.Second, TimeBits: 20, NodeBits: 10, SeqBits: 12, Epoch: now.Add(-24 * time.Hour)} // 12 days
	var ce *ConfigError
	if err := (Config{Now: c.Now, Layout: soon}).Validate(); !errors.As(err, &ce) || ce.Fields[0] != "Layout" || !errors.Is(err, snowflake.ErrLayoutExpired) {
		t.Fatalf("a layout running out in 11 days: %v", err)
	}
	near := snowflake.Layout{Name: "near", Unit: time.Second, TimeBits: 23, NodeBits: 10, SeqBits: 12, Epoch: now.Add(-24 * time.Hour)} // 96 days
	s := newKindsService(t, c, Config{Layout: near})
	rd := s.Readiness(bg)
	var layout *Check
	for i := range rd.Checks {
		if rd.Checks[i].Name == "layout" {
			layout = &rd.Checks[i]
		}
	}
	if layout == nil || layout.OK || !strings.Contains(layout.Detail, "runs out on") || !rd.Snowflake.Ready {
		t.Fatalf("a layout running out in 95 days: %+v (snowflake %+v)", layout, rd.Snowflake)
	}
	s2 := newKindsService(t, c, Config{Layout: near, ExpiryWarning: -1})
	for _, ch := range s2.Readiness(bg).Checks {
		if ch.Name == "layout" && !ch.OK {
			t.Fatalf("warning off: %+v", ch)
		}
	}
	for _, name := range []string{snowflake.Twitter, "sonyflake", "uid-generator", "javascript"} {
		l, err := snowflake.Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := (Config{Now: c.Now, Layout: l}).Validate(); err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
	}
}

// WorkerInfo says how far ahead of the clock the registry has recorded a
// time this node may issue up to.
func TestWorkerInfo_ReservedAhead(t *testing.T) {
	c := newClock()
	s := newKindsService(t, c, Config{})
	if _, err := s.SnowflakeID(); err != nil {
		t.Fatal(err)
	}
	wi := s.WorkerInfo()
	if wi.ReservedAhead <= 0 || wi.ReservedAhead > 3*time.Hour {
		t.Fatalf("reserved ahead %v", wi.ReservedAhead)
	}
}
