package service

import (
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/store/memstore"
	"github.com/frond-id/frond/worker"
)

// BenchmarkKinds: ns per ID of every kind next to raw segment and snowflake
// IDs, in one run (issue 6; reported, never a gate). Snowflake kinds borrow
// up to an hour ahead so the layout's 4,096/ms limit does not dominate.
func BenchmarkKinds(b *testing.B) {
	st := memstore.New(nil)
	st.CreateTag(bg, frond.Tag{Name: "bench", MaxID: 1, Step: 1_000_000})
	s, err := New(bg, Config{
		Snowflake: worker.Settings{MaxLead: time.Hour, PersistEvery: time.Hour}, Now: snowflake.NewSystemClock(0, 0).Now,
		ObfuscationKey: []byte("benchmark key, sixteen bytes+"),
		Serials: map[string]SerialConfig{
			"seg":  {Template: "PAY{time:yyyyMMddHHmmssSSS}{seq:10}", Tag: "bench"},
			"snow": {Template: "ORD{time:yyyyMMddHHmmssSSS}{node:4}{seq:4}", Source: "snowflake"},
		},
	}, st, &memRegistry{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(bg)
	one := make([]int64, 1)
	b.Run("segment-raw", func(b *testing.B) {
		for b.Loop() {
			one[0], _ = s.seg.Next(bg, "bench")
		}
	})
	b.Run("snowflake-raw", func(b *testing.B) {
		for b.Loop() {
			one[0], _ = s.w.Next()
		}
	})
	for _, form := range []string{FormNumber, FormBase62, FormBase32, FormOpaque, FormOpaque62, FormMist} {
		b.Run("segment-"+form, func(b *testing.B) {
			for b.Loop() {
				one[0], _ = s.seg.Next(bg, "bench")
				s.Format(KindSegment, form, one)
			}
		})
	}
	b.Run("snowflake-opaque62", func(b *testing.B) {
		for b.Loop() {
			one[0], _ = s.w.Next()
			s.Format(KindSnowflake, FormOpaque62, one)
		}
	})
	b.Run("serial-segment", func(b *testing.B) {
		for b.Loop() {
			s.serials(bg, "seg", 1)
		}
	})
	b.Run("serial-snowflake", func(b *testing.B) {
		for b.Loop() {
			s.serials(bg, "snow", 1)
		}
	})
	b.Run("snowflake-friendly", func(b *testing.B) {
		for b.Loop() {
			one[0], _ = s.w.Next()
			s.Format(KindSnowflake, FormFriendly, one)
		}
	})
	for _, v := range []int{1, 4, 6, 7} {
		b.Run("uuid-v"+string(rune('0'+v)), func(b *testing.B) {
			for b.Loop() {
				UUIDs(v, 1)
			}
		})
	}
	b.Run("uuid-v5", func(b *testing.B) {
		for b.Loop() {
			NameUUID(5, "dns", "example.com")
		}
	})
	b.Run("uuid-typeid", func(b *testing.B) {
		for b.Loop() {
			s.take(bg, &Request{Kind: KindUUID, Version: 7, Form: FormTypeID, Prefix: "user"})
		}
	})
}
