package service

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"

	"github.com/frond-id/frond/idfmt"
	"github.com/frond-id/frond/store/memstore"
	"github.com/frond-id/frond/worker"
)

func newKindsService(t testing.TB, c *clock, cfg Config) *Service {
	t.Helper()
	cfg.Now, cfg.Snowflake.PersistEvery = c.Now, time.Hour
	s, err := New(bg, cfg, memstore.New(nil), &memRegistry{id: 7}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(bg) })
	return s
}

func TestUUIDs(t *testing.T) {
	for _, v := range []int{4, 7} {
		ids, err := UUIDs(v, 1000)
		if err != nil || len(ids) != 1000 {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] || len(id) != 36 || id[14] != byte('0'+v) {
				t.Fatalf("v%d: %q duplicate or malformed", v, id)
			}
			seen[id] = true
		}
		if v == 7 && !slices.IsSorted(ids) {
			t.Fatal("v7 UUIDs of one process are not increasing")
		}
	}
	for _, bad := range [][2]int{{5, 1}, {4, 0}, {7, MaxBatch + 1}} {
		if _, err := UUIDs(bad[0], bad[1]); Code(err) != frond.CodeInvalidArgument {
			t.Errorf("UUIDs(%v): %v", bad, err)
		}
	}
}

// Serials from a segment tag with a daily reset: unique under concurrency,
// a new day starts at 1 again, and a sequence past {seq:W} is refused.
func TestSerials_SegmentDailyReset(t *testing.T) {
	c := newClock() // 2026-11-22 12:00 UTC
	s := newKindsService(t, c, Config{Serials: map[string]SerialConfig{
		"pay":  {Template: "PAY{time:yyyyMMddHHmmssSSS}{seq:6}", Reset: "day", Step: 50},
		"tiny": {Template: "T{time:yyyyMMdd}{seq:2}", Reset: "day", Step: 10},
	}})
	seen := collectUnique(t, 8, 40, func(i int) ([]string, error) { return s.serials(bg, "pay", 1+i%4) })
	if len(seen) != 8*(10*(1+2+3+4)) {
		t.Fatalf("%d serials", len(seen))
	}
	if !seen["PAY20261122120000000000001"] {
		t.Fatal("the day's sequence does not start at 1")
	}
	c.Add(24 * time.Hour)
	out, err := s.serials(bg, "pay", 1)
	if err != nil || out[0] != "PAY20261123120000000000001" {
		t.Fatalf("next day: %v, %v", out, err)
	}
	if _, err := s.serials(bg, "tiny", 99); err != nil {
		t.Fatal(err)
	}
	if _, err := s.serials(bg, "tiny", 1); Code(err) != frond.CodeSeqOverflow {
		t.Fatalf("sequence 100 in {seq:2}: %v", err)
	}
	if _, err := s.serials(bg, "nope", 1); !errors.Is(err, ErrSerialNotFound) || Code(err) != frond.CodeSerialNotFound {
		t.Fatalf("unknown serial: %v", err)
	}
}

func TestSerials_Snowflake(t *testing.T) {
	c := newClock()
	s := newKindsService(t, c, Config{Serials: map[string]SerialConfig{
		"ord": {Template: "ORD{time:yyyyMMddHHmmssSSS}{node:4}{seq:4}", Source: "snowflake", Zone: "Asia/Shanghai"},
	}})
	out, err := s.serials(bg, "ord", 4096) // one tick's sequence: the fake clock stands still
	if err != nil || len(out) != 4096 {
		t.Fatalf("%d serials, %v", len(out), err)
	}
	// 12:00 UTC is 20:00 in Shanghai; worker 7; sequence 0 then 1.
	if out[0] != "ORD20261122200000000"+"0007"+"0000" || out[1] != "ORD20261122200000000"+"0007"+"0001" {
		t.Fatalf("first serials %q, %q", out[0], out[1])
	}
	seen := map[string]bool{}
	for _, x := range out {
		if seen[x] {
			t.Fatalf("duplicate %s", x)
		}
		seen[x] = true
	}
	c.Add(time.Millisecond)
	if more, err := s.serials(bg, "ord", 1); err != nil || more[0] != "ORD20261122200000001"+"0007"+"0000" {
		t.Fatalf("next tick: %v, %v", more, err)
	}
}

func TestSerials_ConfigErrors(t *testing.T) {
	c := newClock()
	for name, sc := range map[string]SerialConfig{
		"bad template":       {Template: "PAY"},
		"coarse snowflake":   {Template: "P{time:yyyyMMddHHmmss}{node:4}{seq:4}", Source: "snowflake"},
		"snowflake reset":    {Template: "P{time:yyyyMMddHHmmssSSS}{node:4}{seq:4}", Source: "snowflake", Reset: "day"},
		"daylight saving":    {Template: "P{time:yyyyMMddHHmmssSSS}{node:4}{seq:4}", Source: "snowflake", Zone: "Europe/Berlin"},
		"reset without date": {Template: "P{time:HHmmss}{seq:6}", Reset: "day"},
		"unknown source":     {Template: "P{seq:6}", Source: "dice"},
		"unknown zone":       {Template: "P{seq:6}", Zone: "Mars/Olympus"},
	} {
		_, err := New(bg, Config{Now: c.Now, Serials: map[string]SerialConfig{"x": sc}}, memstore.New(nil), &memRegistry{}, nil)
		if Code(err) != frond.CodeInvalidArgument {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := New(bg, Config{Now: c.Now, Forms: map[string]string{"t": FormOpaque}}, memstore.New(nil), &memRegistry{}, nil); Code(err) != frond.CodeInvalidArgument {
		t.Errorf("opaque form without a key: %v", err)
	}
}

func TestFormatReveal(t *testing.T) {
	c := newClock()
	s := newKindsService(t, c, Config{ObfuscationKey: []byte("a key of sixteen bytes or more"), ObfuscationWidth: 53})
	ids := []int64{1, 2, 3, 1 << 40}
	for _, form := range []string{FormNumber, FormBase62, FormBase32, FormOpaque, FormOpaque62, FormMist} {
		strs, nums, err := s.Format(KindSegment, form, ids)
		if err != nil {
			t.Fatalf("%s: %v", form, err)
		}
		if (nums != nil) != Numeric(form) {
			t.Fatalf("%s: numbers %v", form, nums)
		}
		for i, str := range strs {
			back, err := s.Reveal(RevealRequest{Kind: KindSegment, Form: form, Value: str})
			if err != nil || back.ID != ids[i] {
				t.Fatalf("%s: %d -> %q -> %d, %v", form, ids[i], str, back.ID, err)
			}
		}
		if form == FormOpaque && (nums[0] == 1 || nums[1] == 2 || nums[0] >= 1<<53) {
			t.Fatalf("opaque numbers %v", nums)
		}
		if (form == FormBase62 || form == FormBase32) && !slices.IsSorted(strs) {
			t.Fatalf("%s not sortable: %v", form, strs)
		}
	}
	if _, _, err := s.Format(KindSegment, FormOpaque, []int64{1 << 60}); Code(err) != frond.CodeTagExhausted {
		t.Fatalf("ID beyond 53 bits: %v", err)
	}
	for _, bad := range [][3]string{{"segment", "xml", "1"}, {"uuid", "number", "1"}, {"segment", "base62", "!"}, {"segment", "number", "-4"}} {
		if _, err := s.Reveal(RevealRequest{Kind: bad[0], Form: bad[1], Value: bad[2]}); Code(err) != frond.CodeInvalidArgument {
			t.Errorf("Reveal%v: %v", bad, err)
		}
	}
	plain := newKindsService(t, c, Config{})
	if _, _, err := plain.Format(KindSegment, FormOpaque62, ids); err == nil || !strings.Contains(err.Error(), "obfuscation key") {
		t.Fatalf("opaque without a key: %v", err)
	}
}

// Keys are versioned: after a rotation the new key gives the opaque IDs,
// and Reveal still maps the old key's back when asked with its version. A
// splitmix key gives what frond gave before FF1 (pinned in idfmt).
func TestReveal_KeyVersions(t *testing.T) {
	c := newClock()
	oldKey, newKey := []byte("the key of last year, 16+ bytes"), []byte("the key of this year, 16+ bytes")
	before := newKindsService(t, c, Config{ObfuscationKey: oldKey, ObfuscationScheme: idfmt.SchemeSplitmix})
	_, oldNums, err := before.Format(KindSegment, FormOpaque, []int64{1000})
	if err != nil {
		t.Fatal(err)
	}
	legacy, _ := idfmt.NewPermutation(idfmt.SchemeSplitmix, oldKey, 63)
	if want, _ := legacy.Apply(1000); oldNums[0] != want {
		t.Fatalf("splitmix key gives %d, the construction %d", oldNums[0], want)
	}
	after := newKindsService(t, c, Config{ObfuscationKey: newKey, ObfuscationVersion: 2,
		ObfuscationPrevious: []ObfuscationKey{{Version: 1, Scheme: idfmt.SchemeSplitmix, Key: oldKey}}})
	if after.ObfuscationVersion() != 2 {
		t.Fatalf("current version %d", after.ObfuscationVersion())
	}
	strs, newNums, err := after.Format(KindSegment, FormOpaque, []int64{1000})
	if err != nil || newNums[0] == oldNums[0] {
		t.Fatalf("the new key gives %v, %v (old %d)", newNums, err, oldNums[0])
	}
	ff1, _ := idfmt.NewPermutation(idfmt.SchemeFF1, newKey, 63)
	if want, _ := ff1.Apply(1000); newNums[0] != want {
		t.Fatalf("the new key (FF1 by default) gives %d, FF1 %d", newNums[0], want)
	}
	for _, c := range []struct {
		value   string
		version int
	}{{strs[0], 0}, {strs[0], 2}, {strconv.FormatInt(oldNums[0], 10), 1}} {
		if back, err := after.Reveal(RevealRequest{Kind: KindSegment, Form: FormOpaque, Value: c.value, KeyVersion: c.version}); err != nil || back.ID != 1000 {
			t.Errorf("Reveal(%s, version %d) = %d, %v", c.value, c.version, back.ID, err)
		}
	}
	_, err = after.Reveal(RevealRequest{Kind: KindSegment, Form: FormOpaque, Value: strs[0], KeyVersion: 7})
	if Code(err) != frond.CodeInvalidArgument || !strings.Contains(err.Error(), "the keys: 1 2") {
		t.Fatalf("unknown version: %v", err)
	}
}

func TestObfuscationKeys_Invalid(t *testing.T) {
	key := []byte("sixteen bytes at the very least")
	for _, c := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"scheme", Config{ObfuscationKey: key, ObfuscationScheme: "aes"}, "ObfuscationScheme"},
		{"ff1 too narrow", Config{ObfuscationKey: key, ObfuscationWidth: 19}, "ObfuscationWidth"},
		{"duplicate version", Config{ObfuscationKey: key, ObfuscationPrevious: []ObfuscationKey{{Version: 1, Key: key}}}, "ObfuscationPrevious[0]"},
		{"version 0 among previous", Config{ObfuscationKey: key, ObfuscationVersion: 2, ObfuscationPrevious: []ObfuscationKey{{Key: key}}}, "ObfuscationPrevious[0]"},
		{"short previous key", Config{ObfuscationKey: key, ObfuscationVersion: 2, ObfuscationPrevious: []ObfuscationKey{{Version: 1, Key: []byte("short")}}}, "ObfuscationPrevious[0]"},
		{"previous without current", Config{ObfuscationPrevious: []ObfuscationKey{{Version: 1, Key: key}}}, "ObfuscationPrevious"},
	} {
		err := c.cfg.Validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || !slices.Equal(ce.Fields, []string{c.field}) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	// A splitmix key may be narrower than FF1 allows.
	if err := (Config{ObfuscationKey: key, ObfuscationScheme: idfmt.SchemeSplitmix, ObfuscationWidth: 12}).Validate(); err != nil {
		t.Errorf("12-bit splitmix: %v", err)
	}
}

// Every kind under 8 goroutines, on the real clock: no value twice.
func TestKinds_ConcurrentUnique(t *testing.T) {
	s, err := New(bg, Config{Snowflake: worker.Settings{PersistEvery: time.Hour, MaxLead: time.Second},
		ObfuscationKey: []byte("sixteen bytes at the very least"),
		Serials: map[string]SerialConfig{
			"ord": {Template: "ORD{time:yyyyMMddHHmmssSSS}{node:4}{seq:4}", Source: "snowflake"},
			"pay": {Template: "PAY{time:yyyyMMdd}{seq:8}", Reset: "day"},
		}}, memstore.New(nil), &memRegistry{id: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(bg)
	kinds := map[string]func() ([]string, error){
		"uuid4": func() ([]string, error) { return UUIDs(4, 50) },
		"uuid7": func() ([]string, error) { return UUIDs(7, 50) },
		"ord":   func() ([]string, error) { return s.serials(bg, "ord", 50) },
		"pay":   func() ([]string, error) { return s.serials(bg, "pay", 50) },
		"opaque62": func() ([]string, error) {
			ids, err := s.snowflakeIDs(50)
			if err != nil {
				return nil, err
			}
			strs, _, err := s.Format(KindSnowflake, FormOpaque62, ids)
			return strs, err
		},
	}
	for name, gen := range kinds {
		seen := collectUnique(t, 8, 20, func(int) ([]string, error) { return gen() })
		if len(seen) != 8*20*50 {
			t.Fatalf("%s: %d values", name, len(seen))
		}
	}
}

// collectUnique runs gen rounds times on each of workers goroutines and
// returns every value, failing the test on an error or a value seen twice.
func collectUnique(t *testing.T, workers, rounds int, gen func(round int) ([]string, error)) map[string]bool {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				out, err := gen(i)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, v := range out {
					if seen[v] {
						mu.Unlock()
						errs <- errors.New("duplicate " + v)
						return
					}
					seen[v] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return seen
}

// A serial without a reset whose tag is missing is refused, with how to
// create or restore it: the tag used to be created again at max_id 1 without
// a word after a delete, and the same serials came out again.
func TestSerials_MissingTagRefused(t *testing.T) {
	c := newClock()
	s := newKindsService(t, c, Config{Serials: map[string]SerialConfig{
		"inv": {Template: "INV{seq:8}", Step: 10},
	}})
	_, err := s.serials(bg, "inv", 1)
	if Code(err) != frond.CodeTagNotFound || !strings.Contains(err.Error(), "frond tag create inv --step 10") || !strings.Contains(err.Error(), "--max-id") {
		t.Fatalf("first use without the tag: %v", err)
	}
	if _, err := s.CreateTag(bg, frond.Tag{Name: "inv", MaxID: 1, Step: 10}); err != nil {
		t.Fatal(err)
	}
	out, err := s.serials(bg, "inv", 3)
	if err != nil || out[2] != "INV00000003" {
		t.Fatalf("serials %v, %v", out, err)
	}
	if err := s.DeleteTag(bg, "inv"); err != nil {
		t.Fatal(err)
	}
	if out, err := s.serials(bg, "inv", 1); Code(err) != frond.CodeTagNotFound {
		t.Fatalf("after the tag was deleted: %v, %v (serials start over)", out, err)
	}
	if _, err := s.Tag(bg, "inv"); Code(err) != frond.CodeTagNotFound {
		t.Fatalf("the tag was created again: %v", err)
	}
}

// A serial whose tag is a sequence tag takes its numbers as the tag's IDs
// are taken: from the store, request by request (the group commit's
// counters show it), so no node buffers any and they follow each other.
func TestSerials_SequenceTag(t *testing.T) {
	c := newClock()
	s := newKindsService(t, c, Config{Serials: map[string]SerialConfig{
		"inv": {Template: "INV{seq:6}", Tag: "invoice", Step: 100},
	}})
	if _, err := s.CreateTag(bg, frond.Tag{Name: "invoice", MaxID: 1, Step: 100, Mode: frond.ModeSequence}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"INV000001", "INV000002", "INV000003"} {
		out, err := s.serials(bg, "inv", 1)
		if err != nil || out[0] != want {
			t.Fatalf("serial %d: %v, %v (want %s)", i, out, err, want)
		}
	}
	st := s.SequenceStats()
	if len(st) != 1 || st[0].Tag != "invoice" || st[0].Trips != 3 {
		t.Fatalf("sequence stats %+v: the serials did not come from the sequence tag's store calls", st)
	}
	if len(s.SegmentStats()) != 0 {
		t.Fatalf("segments buffered for a sequence tag: %+v", s.SegmentStats())
	}
}

// The rule of forms across protocols (segmentForm), at the request: a
// ranges request of a tag whose form is numeric, from a protocol that
// answers numbers (TinyID's nextId), gets the numbers, its batch cut to
// MaxBatch as TinyID cuts its own; a lease or a text form is refused
// before any ID is taken; a form the request names is its own.
func TestCheck_FormsRule(t *testing.T) {
	s := newKindsService(t, newClock(), Config{ObfuscationKey: []byte("a key of sixteen bytes or more"), ObfuscationScheme: "ff1",
		Forms: map[string]string{"op": FormOpaque, "b": FormBase62}})
	r := Request{Kind: KindSegment, Name: "op", Count: 20_000, Ranges: true, Numbers: true}
	if err := s.Check(&r); err != nil || r.Ranges || r.Count != MaxBatch || r.Form != FormOpaque {
		t.Fatalf("TinyID's nextId of an opaque tag: %+v, %v", r, err)
	}
	for _, r := range []Request{
		{Kind: KindSegment, Name: "op", Count: 5, Ranges: true, Lease: true},
		{Kind: KindSegment, Name: "op", Run: true},
		{Kind: KindSegment, Name: "b", Count: 5, Ranges: true, Numbers: true},
		{Kind: KindSegment, Name: "b", Numbers: true},
	} {
		if err := s.Check(&r); !errors.Is(err, frond.ErrFormNotCarried) || !strings.Contains(err.Error(), "(its configured form)") {
			t.Errorf("%+v: %v", r, err)
		}
	}
	r = Request{Kind: KindSegment, Name: "b", Form: FormNumber, Ranges: true}
	if err := s.Check(&r); err != nil {
		t.Errorf("ranges of form number asked for: %v", err)
	}
	// TinyID's nextId of a text tag said "ranges are plain numbers", about
	// ranges its caller never asked for (issue 44, item 8): it says what
	// the route answers.
	r = Request{Kind: KindSegment, Name: "b", Count: 5, Ranges: true, Numbers: true}
	if err := s.Check(&r); err == nil || strings.Contains(err.Error(), "ranges") || !strings.Contains(err.Error(), "this API answers numbers, and base62 is text") {
		t.Errorf("TinyID's nextId of a base62 tag: %v", err)
	}
}
