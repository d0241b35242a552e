package snowflake

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond/internal/testclock"
)

func newTestGen(t *testing.T, c *testclock.Clock, s Settings) *Generator {
	t.Helper()
	s.Now, s.Sleep = c.Now, c.Sleep
	g, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func mustNext(t *testing.T, g *Generator) int64 {
	t.Helper()
	id, err := g.Next()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestNew_Settings(t *testing.T) {
	c := testclock.New(testNow)
	g := newTestGen(t, c, Settings{})
	if g.Layout().Name != Twitter || g.Node() != 0 {
		t.Fatalf("zero settings: layout %s node %d", g.Layout().Name, g.Node())
	}
	for name, s := range map[string]Settings{
		"node too big":        {Node: 1024},
		"node negative":       {Node: -1},
		"negative lead":       {MaxLead: -time.Millisecond},
		"random start > half": {RandomStart: 2049},
		"bad layout":          {Layout: Layout{Unit: time.Millisecond, TimeBits: 60, NodeBits: 10, SeqBits: 12, Epoch: TwitterEpoch}},
		"not-before < epoch":  {NotBefore: TwitterEpoch.Add(-time.Hour)},
	} {
		s.Now = c.Now
		if _, err := New(s); !errors.Is(err, ErrInvalidLayout) && !errors.Is(err, ErrInvalidSettings) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestGenerator_Next_OK(t *testing.T) {
	c := testclock.New(testNow)
	g := newTestGen(t, c, Settings{Node: 7})
	a := mustNext(t, g)
	b := mustNext(t, g)
	c.Add(time.Millisecond)
	d := mustNext(t, g)
	if !(a < b && b < d) {
		t.Fatalf("not increasing: %d %d %d", a, b, d)
	}
	l := g.Layout()
	pa, _ := l.Decompose(a)
	pd, _ := l.Decompose(d)
	if pa.Node != 7 || pa.Seq != 0 || pd.Seq != 0 || pd.Tick != pa.Tick+1 {
		t.Fatalf("parts %+v then %+v", pa, pd)
	}
	if !pa.Time.Equal(testNow) {
		t.Errorf("time %v, want %v", pa.Time, testNow)
	}
	if !g.Last().Equal(testNow.Add(time.Millisecond)) {
		t.Errorf("Last = %v", g.Last())
	}
}

func TestGenerator_SequenceExhausted_Waits(t *testing.T) {
	c := testclock.New(testNow)
	g := newTestGen(t, c, Settings{})
	ids, err := g.NextN(4096)
	if err != nil || len(ids) != 4096 || c.Sleeps() != 0 {
		t.Fatalf("first tick: %d IDs, err %v, %d sleeps", len(ids), err, c.Sleeps())
	}
	id := mustNext(t, g) // the tick is used up: wait for the next one
	if c.Sleeps() != 1 || c.Now() != testNow.Add(time.Millisecond).UnixNano() {
		t.Fatalf("sleeps %d, clock %v", c.Sleeps(), time.Unix(0, c.Now()))
	}
	p, _ := g.Layout().Decompose(id)
	if p.Seq != 0 || !p.Time.Equal(testNow.Add(time.Millisecond)) || id <= ids[4095] {
		t.Fatalf("after exhaustion %+v", p)
	}
	if st := g.Stats(); st.Waits != 1 || st.Borrows != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestGenerator_Borrow(t *testing.T) {
	c := testclock.New(testNow)
	g := newTestGen(t, c, Settings{MaxLead: 3 * time.Millisecond})
	ids, err := g.NextN(4 * 4096) // the clock stands still: ticks now, +1, +2, +3
	if err != nil || c.Sleeps() != 0 {
		t.Fatalf("err %v, sleeps %d", err, c.Sleeps())
	}
	if !slices.IsSorted(ids) {
		t.Fatal("borrowed IDs not increasing")
	}
	last, _ := g.Layout().Decompose(ids[len(ids)-1])
	if !last.Time.Equal(testNow.Add(3 * time.Millisecond)) {
		t.Fatalf("last borrowed tick %v", last.Time)
	}
	st := g.Stats()
	if st.Borrows != 3 || st.MaxLead != 3*time.Millisecond || st.Lead != 3*time.Millisecond || st.MaxLeadAllowed != 3*time.Millisecond {
		t.Fatalf("stats %+v", st)
	}
	// At the limit: the next ID waits until the clock is within MaxLead of tick +4.
	id := mustNext(t, g)
	if c.Sleeps() != 1 || c.Now() != testNow.Add(time.Millisecond).UnixNano() {
		t.Fatalf("sleeps %d, clock at +%v", c.Sleeps(), time.Duration(c.Now()-testNow.UnixNano()))
	}
	p, _ := g.Layout().Decompose(id)
	if !p.Time.Equal(testNow.Add(4 * time.Millisecond)) {
		t.Fatalf("tick after the limit %v", p.Time)
	}
	// Once the clock passes the borrowed ticks, IDs follow the clock again.
	c.Add(10 * time.Millisecond)
	p, _ = g.Layout().Decompose(mustNext(t, g))
	if !p.Time.Equal(testNow.Add(11 * time.Millisecond)) {
		t.Fatalf("after catching up %v", p.Time)
	}
	if g.Stats().Lead != 0 {
		t.Errorf("lead %v after catching up", g.Stats().Lead)
	}
}

func TestGenerator_SmallStepBack_Absorbed(t *testing.T) {
	c := testclock.New(testNow)
	g := newTestGen(t, c, Settings{})
	before := mustNext(t, g)
	c.Add(-3 * time.Millisecond)
	after := mustNext(t, g) // absorbed: same tick, next sequence, no sleep
	if after <= before || c.Sleeps() != 0 {
		t.Fatalf("after step back: %d <= %d or %d sleeps", after, before, c.Sleeps())
	}
	// Use up the tick: the next call waits until the clock passes it.
	if _, err := g.NextN(4094); err != nil {
		t.Fatal(err)
	}
	id := mustNext(t, g)
	p, _ := g.Layout().Decompose(id)
	if !p.Time.Equal(testNow.Add(time.Millisecond)) || c.Now() < testNow.Add(time.Millisecond).UnixNano() {
		t.Fatalf("waited to %v, id time %v", time.Unix(0, c.Now()), p.Time)
	}
	if st := g.Stats(); st.BackwardSteps != 1 || st.Refusals != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestGenerator_LargeStepBack_ErrClockBackwards(t *testing.T) {
	c := testclock.New(testNow)
	g := newTestGen(t, c, Settings{})
	before := mustNext(t, g)
	c.Add(-10 * time.Millisecond)
	_, err := g.Next()
	var ce *ClockError
	if !errors.Is(err, ErrClockBackwards) || !errors.As(err, &ce) {
		t.Fatalf("err = %v", err)
	}
	if ce.Offset != 10*time.Millisecond || ce.Max != DefaultMaxBackward || ce.Stalled {
		t.Fatalf("ClockError %+v", ce)
	}
	if g.Behind() != 10*time.Millisecond {
		t.Errorf("Behind = %v", g.Behind())
	}
	if _, err := g.NextN(3); !errors.Is(err, ErrClockBackwards) {
		t.Fatalf("NextN err = %v", err)
	}
	c.Add(10*time.Millisecond + time.Microsecond)
	if after := mustNext(t, g); after <= before {
		t.Fatalf("after recovery %d <= %d", after, before)
	}
	if st := g.Stats(); st.Refusals != 2 || st.BackwardSteps != 1 || st.Behind != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestGenerator_RefuseEveryStep(t *testing.T) {
	c := testclock.New(testNow)
	g := newTestGen(t, c, Settings{MaxBackward: -1})
	mustNext(t, g)
	c.Add(time.Millisecond)
	mustNext(t, g)
	c.Add(-time.Microsecond)
	if _, err := g.Next(); !errors.Is(err, ErrClockBackwards) {
		t.Fatalf("err = %v", err)
	}
}

// Leaf's tilNextMillis spins forever when the clock steps back while it
// waits. Here a clock that keeps going back while a call waits ends the call.
func TestGenerator_ClockBackWhileWaiting_Ends(t *testing.T) {
	c := testclock.New(testNow)
	c.OnSleep(func(time.Duration) time.Duration { return -time.Millisecond }, nil) // each sleep finds the clock a millisecond back
	g := newTestGen(t, c, Settings{})
	if _, err := g.NextN(4096); err != nil {
		t.Fatal(err)
	}
	_, err := g.Next()
	if !errors.Is(err, ErrClockBackwards) {
		t.Fatalf("err = %v", err)
	}
	if n := c.Sleeps(); n == 0 || n > 10 {
		t.Fatalf("%d sleeps", n)
	}
}

func TestGenerator_StalledClock_Ends(t *testing.T) {
	c := testclock.New(testNow)
	c.OnSleep(func(time.Duration) time.Duration { return 0 }, nil) // time stands still
	g := newTestGen(t, c, Settings{})
	if _, err := g.NextN(4096); err != nil {
		t.Fatal(err)
	}
	_, err := g.Next()
	var ce *ClockError
	if !errors.As(err, &ce) || !ce.Stalled {
		t.Fatalf("err = %v", err)
	}
	if n := c.Sleeps(); n == 0 || n > 10 {
		t.Fatalf("%d sleeps", n)
	}
}

func TestGenerator_NotBefore(t *testing.T) {
	t.Run("ErrClockBehind", func(t *testing.T) {
		c := testclock.New(testNow)
		g := newTestGen(t, c, Settings{NotBefore: testNow.Add(time.Second)})
		_, err := g.Next()
		var ce *ClockError
		if !errors.As(err, &ce) || ce.Offset != time.Second {
			t.Fatalf("err = %v", err)
		}
		if g.Behind() != time.Second {
			t.Errorf("Behind %v", g.Behind())
		}
	})
	t.Run("SmallGapWaited", func(t *testing.T) {
		c := testclock.New(testNow)
		nb := testNow.Add(2 * time.Millisecond)
		g := newTestGen(t, c, Settings{NotBefore: nb})
		p, _ := g.Layout().Decompose(mustNext(t, g))
		if !p.Time.After(nb) || c.Sleeps() != 1 {
			t.Fatalf("first ID at %v, sleeps %d", p.Time, c.Sleeps())
		}
	})
	t.Run("SameTickNotReused", func(t *testing.T) {
		c := testclock.New(testNow)
		g := newTestGen(t, c, Settings{NotBefore: testNow})
		p, _ := g.Layout().Decompose(mustNext(t, g))
		if !p.Time.After(testNow) {
			t.Fatalf("reused the not-before tick: %v", p.Time)
		}
	})
}

func TestGenerator_RandomStart(t *testing.T) {
	c := testclock.New(testNow)
	g := newTestGen(t, c, Settings{RandomStart: 100})
	seen := map[int64]bool{}
	for i := 0; i < 200; i++ {
		p, _ := g.Layout().Decompose(mustNext(t, g))
		if p.Seq >= 100 {
			t.Fatalf("first sequence of a tick %d >= 100", p.Seq)
		}
		seen[p.Seq] = true
		c.Add(time.Millisecond)
	}
	if len(seen) < 20 {
		t.Fatalf("only %d distinct start values in 200 ticks", len(seen))
	}
}

func TestGenerator_LayoutExpired(t *testing.T) {
	// A layout of 20 bits of seconds: 12 days.
	l := Layout{Name: "tiny", Unit: time.Second, TimeBits: 20, NodeBits: 1, SeqBits: 2, Epoch: testNow.Add(-(1<<20 - 2) * time.Second)}
	c := testclock.New(testNow)
	g := newTestGen(t, c, Settings{Layout: l, MaxLead: time.Second})
	if _, err := g.NextN(8); err != nil { // ticks max-1 and max (borrowed)
		t.Fatal(err)
	}
	if _, err := g.Next(); !errors.Is(err, ErrLayoutExpired) {
		t.Fatalf("err = %v", err)
	}
	c.Add(5 * time.Second)
	if _, err := g.Next(); !errors.Is(err, ErrLayoutExpired) {
		t.Fatalf("err = %v", err)
	}
}

func TestGenerator_CoarseUnit(t *testing.T) {
	l, _ := Preset(UIDGenerator)
	c := testclock.New(testNow)
	g := newTestGen(t, c, Settings{Layout: l, Node: l.MaxNode()})
	ids, err := g.NextN(8192 + 10) // one second's worth, then a wait of a second
	if err != nil || !slices.IsSorted(ids) || c.Sleeps() != 1 {
		t.Fatalf("err %v, sleeps %d", err, c.Sleeps())
	}
	p, _ := l.Decompose(ids[len(ids)-1])
	if p.Node != l.MaxNode() || p.Seq != 9 {
		t.Fatalf("parts %+v", p)
	}
}

// Many goroutines, a clock that moves in small steps: IDs are unique, each
// goroutine's IDs increase, and borrowing never exceeds its limit.
func TestGenerator_Concurrent(t *testing.T) {
	for _, lead := range []time.Duration{0, 2 * time.Millisecond} {
		t.Run("lead="+lead.String(), func(t *testing.T) {
			c := testclock.New(testNow)
			g := newTestGen(t, c, Settings{Node: 3, MaxLead: lead, RandomStart: 50})
			const workers, per = 8, 5000
			results := make(chan []int64, workers)
			errs := make(chan error, workers)
			for w := 0; w < workers; w++ {
				go func() {
					ids := make([]int64, 0, per)
					for i := 0; i < per; i++ {
						if i%97 == 0 {
							c.Add(100 * time.Microsecond)
						}
						var id int64
						var err error
						if i%10 == 0 {
							var b []int64
							b, err = g.AppendN(nil, 1)
							if len(b) == 1 {
								id = b[0]
							}
						} else {
							id, err = g.Next()
						}
						if err != nil {
							errs <- err
							return
						}
						ids = append(ids, id)
					}
					results <- ids
				}()
			}
			all := make(map[int64]bool, workers*per)
			for w := 0; w < workers; w++ {
				select {
				case err := <-errs:
					t.Fatal(err)
				case ids := <-results:
					if !slices.IsSorted(ids) {
						t.Fatal("a goroutine's IDs do not increase")
					}
					for _, id := range ids {
						if all[id] {
							t.Fatalf("duplicate ID %d", id)
						}
						all[id] = true
					}
				}
			}
			if st := g.Stats(); st.MaxLead > lead {
				t.Fatalf("lead %v above the limit %v", st.MaxLead, lead)
			}
		})
	}
}

// The real clock: IDs are unique and increase under contention, and time
// fields stay close to the wall clock.
func TestGenerator_SystemClock(t *testing.T) {
	g, err := New(Settings{MaxLead: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	const workers, per = 4, 20000
	results := make(chan []int64, workers)
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() {
			ids, err := g.NextN(per / 2)
			for i := 0; err == nil && i < per/2; i++ {
				var id int64
				id, err = g.Next()
				ids = append(ids, id)
			}
			if err != nil {
				errs <- err
				return
			}
			results <- ids
		}()
	}
	seen := map[int64]bool{}
	for w := 0; w < workers; w++ {
		select {
		case err := <-errs:
			t.Fatal(err)
		case ids := <-results:
			if !slices.IsSorted(ids) {
				t.Fatal("not increasing")
			}
			for _, id := range ids {
				if seen[id] {
					t.Fatalf("duplicate %d", id)
				}
				seen[id] = true
			}
		}
	}
	l := g.Layout()
	p, _ := l.Decompose(g.compose(g.state.Load()))
	if d := p.Time.Sub(start); d < -time.Millisecond || d > time.Since(start)+2*time.Millisecond {
		t.Fatalf("last ID's time %v is %v from the start", p.Time, d)
	}
}

func TestSystemClock(t *testing.T) {
	c := NewSystemClock(time.Millisecond, -time.Hour)
	for i := 0; i < 1000; i++ {
		// Between two readings of the system clock, not after one: on a
		// busy machine the goroutine was preempted for 7 ms between the
		// two calls (issue 44, item 3).
		before := time.Now().Add(-time.Hour)
		got := time.Unix(0, c.Now())
		after := time.Now().Add(-time.Hour)
		if got.Before(before.Add(-time.Millisecond)) || got.After(after.Add(time.Millisecond)) {
			t.Fatalf("reading %v outside [%v, %v] by more than a millisecond", got, before, after)
		}
	}
}

// SetOffset shows in the very next reading, not after the resync interval:
// the test clock of frond serve sets it before the first reading.
func TestSystemClock_SetOffsetAtOnce(t *testing.T) {
	c := NewSystemClock(time.Hour, 0)
	c.Now()
	c.SetOffset(-5 * time.Minute)
	got := time.Unix(0, c.Now())
	if d := got.Sub(time.Now().Add(-5 * time.Minute)); d > time.Millisecond || d < -5*time.Millisecond {
		t.Fatalf("reading after SetOffset off by %v", d)
	}
}

func TestGenerator_SetLimit(t *testing.T) {
	c := testclock.New(testNow)
	g := newTestGen(t, c, Settings{MaxLead: 10 * time.Millisecond})
	g.SetLimit(testNow.Add(time.Millisecond))
	if _, err := g.NextN(4096 * 2); err != nil { // ticks now and now+1 (borrowed, within the limit)
		t.Fatal(err)
	}
	// Borrowing stops at the limit: the next ID waits for the clock to reach
	// now+2, which is past the limit.
	if _, err := g.Next(); !errors.Is(err, ErrUnreserved) {
		t.Fatalf("past the limit: %v", err)
	}
	g.SetLimit(testNow.Add(time.Hour))
	if _, err := g.Next(); err != nil {
		t.Fatalf("after raising the limit: %v", err)
	}
	// The zero time is no time reserved, not "no limit".
	g.SetLimit(time.Time{})
	c.Add(2 * time.Hour)
	if _, err := g.Next(); !errors.Is(err, ErrUnreserved) {
		t.Fatalf("limit at the zero time: %v", err)
	}
	g.ClearLimit()
	if _, err := g.Next(); err != nil {
		t.Fatalf("without a limit: %v", err)
	}
}

// A Reserved generator issues nothing before its first SetLimit, whatever
// NotBefore is (zero for a worker ID never used).
func TestGenerator_ReservedIssuesNothingBeforeSetLimit(t *testing.T) {
	for _, nb := range []time.Time{{}, testNow.Add(-time.Minute)} {
		c := testclock.New(testNow)
		g := newTestGen(t, c, Settings{Reserved: true, NotBefore: nb})
		if _, err := g.Next(); !errors.Is(err, ErrUnreserved) {
			t.Fatalf("NotBefore %v, before SetLimit: %v", nb, err)
		}
		if ids, err := g.NextN(3); !errors.Is(err, ErrUnreserved) || len(ids) != 0 {
			t.Fatalf("NotBefore %v, NextN before SetLimit: %v, %v", nb, ids, err)
		}
		if !g.WithinLimit(time.Time{}) || g.WithinLimit(testNow) {
			t.Fatal("WithinLimit before SetLimit")
		}
		g.SetLimit(testNow.Add(time.Second))
		if _, err := g.Next(); err != nil {
			t.Fatalf("NotBefore %v, after SetLimit: %v", nb, err)
		}
	}
}

// A call that loses the race for a new tick again and again, while the clock
// advances normally, keeps waiting: it is not a stalled clock.
func TestGenerator_StarvedCallerIsNotStalled(t *testing.T) {
	c := testclock.New(testNow)
	g := newTestGen(t, c, Settings{})
	if _, err := g.NextN(4096); err != nil {
		t.Fatal(err)
	}
	lost := 0
	c.OnSleep(nil, func() {
		if lost < 20 { // a competitor takes the whole new tick while the caller sleeps
			lost++
			if _, err := g.NextN(4096); err != nil {
				t.Errorf("competitor: %v", err)
			}
		}
	})
	id, err := g.Next()
	if err != nil {
		t.Fatalf("after losing %d ticks: %v", lost, err)
	}
	p, _ := g.Layout().Decompose(id)
	if lost != 20 || !p.Time.Equal(testNow.Add(21*time.Millisecond)) {
		t.Fatalf("lost %d ticks, ID at %v", lost, p.Time)
	}
}

// Seal: calls racing with it either take effect before the time it returns
// or fail; none issues an ID after it.
func TestGenerator_Seal(t *testing.T) {
	g, err := New(Settings{MaxLead: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan int64, 1<<20)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				id, err := g.Next()
				if err != nil {
					if !errors.Is(err, ErrSealed) {
						t.Error(err)
					}
					return
				}
				results <- id
			}
		}()
	}
	time.Sleep(5 * time.Millisecond) // let the workers run; what is tested is the ordering
	last := g.Seal()
	wg.Wait()
	close(results)
	for id := range results {
		if p, _ := g.Layout().Decompose(id); p.Time.After(last) {
			t.Fatalf("ID at %v issued after Seal returned %v", p.Time, last)
		}
	}
	if _, err := g.NextN(3); !errors.Is(err, ErrSealed) {
		t.Fatalf("after Seal: %v", err)
	}
	if !g.Seal().Equal(last) || !g.Last().Equal(last) {
		t.Fatal("Seal or Last moved after sealing")
	}
}

// A caller whose atomic add runs past the tick (others took its last values
// between its look at the state and its add) holds a value of the next tick:
// it waits for the clock to reach that tick, and past the limit it is
// refused without pushing the state any further, however often it is called.
func TestGenerator_AddPastTheTick(t *testing.T) {
	for _, limited := range []bool{false, true} {
		c := testclock.New(testNow)
		var g *Generator
		race := false
		g, err := New(Settings{Sleep: c.Sleep, Now: func() int64 {
			if race { // between the caller's look at the state and its add
				race = false
				if _, err := g.Next(); err != nil {
					t.Errorf("competitor: %v", err)
				}
			}
			return c.Now()
		}})
		if err != nil {
			t.Fatal(err)
		}
		if limited {
			g.SetLimit(testNow)
		}
		if _, err := g.NextN(4095); err != nil { // all but the tick's last value
			t.Fatal(err)
		}
		race = true
		id, err := g.Next()
		if limited {
			if !errors.Is(err, ErrUnreserved) {
				t.Fatalf("past the limit: %v, %v", id, err)
			}
			for range 10000 {
				if _, err := g.Next(); !errors.Is(err, ErrUnreserved) {
					t.Fatalf("refused call: %v", err)
				}
			}
			if want := testNow.Add(time.Millisecond); !g.Last().Equal(want) {
				t.Fatalf("refused calls moved the state to %v, want %v", g.Last(), want)
			}
			g.SetLimit(testNow.Add(time.Second))
			c.Add(time.Millisecond)
			if id, err = g.Next(); err != nil {
				t.Fatal(err)
			}
			if p, _ := g.Layout().Decompose(id); !p.Time.Equal(testNow.Add(time.Millisecond)) || p.Seq != 1 {
				t.Fatalf("after raising the limit: %+v", p)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		p, _ := g.Layout().Decompose(id)
		if !p.Time.Equal(testNow.Add(time.Millisecond)) || p.Seq != 0 || c.Now() < testNow.Add(time.Millisecond).UnixNano() {
			t.Fatalf("ID %+v at clock %v: not waited for", p, time.Unix(0, c.Now()))
		}
		if st := g.Stats(); st.Waits != 1 || st.Borrows != 0 {
			t.Fatalf("stats %+v", st)
		}
	}
}
