package keyseq_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/store/memstore"
)

// BenchmarkNext: one value of a key already in memory, from every core,
// over 100,000 keys (reported, never a gate: values/s is b.N over the
// time).
//
//	go test -run XXX -bench Next -cpu 1,2 -count 5 ./keyseq
func BenchmarkNext(b *testing.B) {
	e, err := keyseq.New(keyseq.Space{Name: "bench"}, keyseq.Segments{Store: memstore.New(nil)})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, 100_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("conversation-%d", i)
		if _, _, err := e.Next(context.Background(), keys[i], 1); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		r := rand.New(rand.NewPCG(rand.Uint64(), 0))
		for pb.Next() {
			if _, _, err := e.Next(ctx, keys[r.IntN(len(keys))], 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "values/s")
}

// The memory of a space is its counters', whatever the keys: 10 million
// keys take no more than the first hundred thousand (by which every
// section has its table).
func TestMemory_BoundedByTable(t *testing.T) {
	if testing.Short() {
		t.Skip("10 million keys")
	}
	e, err := keyseq.New(keyseq.Space{Name: "mem"}, keyseq.Segments{Store: memstore.New(nil)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	key := make([]byte, 0, 32)
	for i := range 100_000 {
		if _, _, err := e.Next(ctx, string(fmt.Appendf(key[:0], "k%d", i)), 1); err != nil {
			t.Fatal(err)
		}
	}
	before := heap()
	keys := 10_000_000
	if raceOn {
		keys = 1_000_000
	}
	for i := range keys {
		if _, _, err := e.Next(ctx, string(fmt.Appendf(key[:0], "k%d", i)), 1); err != nil {
			t.Fatal(err)
		}
	}
	after := heap()
	sp := e.Space()
	table := uint64(sp.Sections*sp.Slots) * 4
	rss := residentBytes()
	t.Logf("%d keys: heap %d MiB after 100,000 keys, %d MiB after them all (the counters: %d MiB, %.1f bytes a key); the test process's RSS %d MiB (%.1f bytes a key)",
		keys, before>>20, after>>20, table>>20, float64(table)/float64(keys), rss>>20, float64(rss)/float64(keys))
	if after > before+8<<20 || after > 300<<20 || rss > 300<<20 && !raceOn {
		t.Fatalf("the heap grew with the keys: %d MiB to %d MiB", before>>20, after>>20)
	}
}

// residentBytes is the process's resident set (VmRSS), 0 where /proc has
// none.
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
