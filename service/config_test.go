package service

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/store/memstore"
	"github.com/frond-id/frond/worker"
)

func TestConfig_Validate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero Config: %v", err)
	}
	sonyflake, _ := snowflake.Preset(snowflake.Sonyflake)
	key := []byte("0123456789abcdef")
	for _, tc := range []struct {
		name   string
		cfg    Config
		fields []string
	}{
		{"PersistEvery", Config{Snowflake: worker.Settings{PersistEvery: -time.Second}}, []string{"Snowflake.PersistEvery"}},
		{"MaxLead", Config{Snowflake: worker.Settings{MaxLead: -time.Millisecond}}, []string{"Snowflake.MaxLead"}},
		{"RandomStart", Config{Snowflake: worker.Settings{Layout: sonyflake, RandomStart: 200}}, []string{"Snowflake.RandomStart"}},
		{"Threshold", Config{Segment: segment.Settings{Threshold: 2}}, []string{"Segment.Threshold"}},
		{"MaxStep", Config{Segment: segment.Settings{MaxStep: -1}}, []string{"Segment.MaxStep"}},
		{"LoadTimeout", Config{Segment: segment.Settings{LoadTimeout: -time.Second}}, []string{"Segment.LoadTimeout"}},
		{"SlowSegment", Config{Segment: segment.Settings{FastSegment: time.Hour, SlowSegment: time.Minute}}, []string{"Segment.FastSegment", "Segment.SlowSegment"}},
		{"SerialStep", Config{Serials: map[string]SerialConfig{"pay": {Template: "P{seq:6}", Step: -5}}}, []string{"Serials[pay].Step"}},
		{"SerialTemplate", Config{Serials: map[string]SerialConfig{"pay": {Template: "P{seq:x}"}}}, []string{"Serials[pay].Template"}},
		{"SerialZone", Config{Serials: map[string]SerialConfig{"pay": {Template: "P{seq:6}", Zone: "Mars/Base"}}}, []string{"Serials[pay].Zone"}},
		{"SerialSource", Config{Serials: map[string]SerialConfig{"pay": {Template: "P{seq:6}", Source: "moon"}}}, []string{"Serials[pay].Source"}},
		{"SerialTag", Config{Serials: map[string]SerialConfig{"pay": {Template: "P{seq:6}", Tag: "no spaces"}}}, []string{"Serials[pay].Tag"}},
		{"ObfuscationKey", Config{ObfuscationKey: []byte("short")}, []string{"ObfuscationKey"}},
		{"ObfuscationWidth", Config{ObfuscationWidth: 64}, []string{"ObfuscationWidth"}},
		{"ObfuscationWidthWithKey", Config{ObfuscationKey: key, ObfuscationWidth: 1}, []string{"ObfuscationWidth"}},
		{"Form", Config{Forms: map[string]string{"order": "roman"}}, []string{"Forms[order]"}},
		{"FormNeedsKey", Config{Forms: map[string]string{"order": FormOpaque}}, []string{"Forms[order]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			var ce *ConfigError
			if !errors.As(err, &ce) || !slices.Equal(ce.Fields, tc.fields) {
				t.Fatalf("Validate() = %v; want a *ConfigError on %v", err, tc.fields)
			}
			// New refuses it the same way, before it touches the registry.
			reg := &memRegistry{id: 7}
			if _, err := New(bg, tc.cfg, memstore.New(nil), reg, nil); !errors.As(err, &ce) {
				t.Fatalf("New: %v; want the *ConfigError", err)
			}
			if reg.acquires != 0 {
				t.Fatal("New acquired a worker ID with an invalid Config")
			}
		})
	}
}

// A serial's step used to be checked only when its first tag was created,
// on a request: a client's 400 for a configuration error.
func TestConfig_ValidateSerialStep(t *testing.T) {
	err := Config{Serials: map[string]SerialConfig{"pay": {Template: "P{seq:6}", Step: -5}}}.Validate()
	if !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("step -5: %v", err)
	}
	if err := (Config{Serials: map[string]SerialConfig{"pay": {Template: "P{seq:6}"}}}).Validate(); err != nil {
		t.Fatalf("step 0 (the default 1000): %v", err)
	}
}
