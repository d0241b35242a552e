package redisutil

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/redis/go-redis/v9"
)

func TestParse(t *testing.T) {
	for _, bad := range []string{
		"http://x", "redis://a b", "redis://x?frond_timeout=soon", "redis://x?frond_timeout=0s",
		"redis://x?frond_allow_volatile=maybe", "redis://x?frond_other=1", "redis://x?no_such_option=1",
	} {
		if _, err := Parse(bad, "frond_prefix"); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("Parse(%q) = %v, want ErrInvalidArgument", bad, err)
		}
	}
	u, err := Parse("redis://user:secret@h:1234/2?frond_prefix=&frond_timeout=2s&frond_allow_volatile=1&pool_size=3", "frond_prefix")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := u.Params["frond_prefix"]; !ok || v != "" || len(u.Params) != 1 {
		t.Errorf("params %v", u.Params)
	}
	o := u.Options
	if u.Where != "redis://h:1234/2" || u.Timeout != 2*time.Second || !u.AllowVolatile ||
		o.Addr != "h:1234" || o.DB != 2 || o.Username != "user" || o.Password != "secret" || o.PoolSize != 3 ||
		o.DialTimeout != 2*time.Second || o.ReadTimeout != 2*time.Second || o.WriteTimeout != 2*time.Second || o.MaxRetries != 1 {
		t.Errorf("parsed %+v options %+v", u, o)
	}
	u, err = Parse("rediss://h/0?frond_timeout=", "frond_prefix")
	if err != nil || u.Timeout != DefaultTimeout || u.AllowVolatile || u.Options.TLSConfig == nil || len(u.Params) != 0 {
		t.Errorf("defaults: %+v, %v", u, err)
	}
}

func TestRisk_Accept(t *testing.T) {
	r := Risk{Refusal: "bad things happen", Warning: "bad things may happen", URL: "thing"}
	if w, err := r.Accept("redis://h/0", "", false); w != "" || err != nil {
		t.Errorf("persistent: %q, %v", w, err)
	}
	if w, err := r.Accept("redis://h/0", "keeps nothing", true); err != nil || w != "redis keeps nothing: bad things may happen (accepted with frond_allow_volatile=true)" {
		t.Errorf("accepted: %q, %v", w, err)
	}
	_, err := r.Accept("redis://h/0", "keeps nothing", false)
	if !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "redis at redis://h/0 keeps nothing: after a Redis crash or restart bad things happen") ||
		!strings.Contains(err.Error(), "frond_allow_volatile=true in the thing URL") {
		t.Errorf("refused: %v", err)
	}
}

func TestBound(t *testing.T) {
	c, cancel := Bound(context.Background(), time.Minute)
	defer cancel()
	if dl, ok := c.Deadline(); !ok || time.Until(dl) > time.Minute {
		t.Errorf("deadline %v %v", dl, ok)
	}
	short, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	c, cancel = Bound(short, time.Minute)
	defer cancel()
	if dl, _ := c.Deadline(); time.Until(dl) > time.Second {
		t.Errorf("the sooner deadline was not kept: %v", dl)
	}
}

// An unreachable server is an error besides the reason; a server that
// refuses CONFIG GET only a reason.
func TestVolatile(t *testing.T) {
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer down.Close()
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	why, err := Volatile(c, down)
	if err == nil || !strings.Contains(why, "does not say") {
		t.Errorf("unreachable: %q, %v", why, err)
	}

	raw := testenv.Getenv(t, "FROND_TEST_REDIS_URL")
	u, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(u.Options)
	defer admin.Close()
	why, err = Volatile(c, admin)
	if err != nil {
		t.Fatal(err)
	}
	aof := admin.ConfigGet(c, "appendonly").Val()["appendonly"]
	save := admin.ConfigGet(c, "save").Val()["save"]
	if want := aof != "yes"; want != (why != "") {
		t.Errorf("appendonly %q save %q: reason %q", aof, save, why)
	}
	if aof != "yes" {
		// RDB snapshots alone are not enough: a crash loses the writes
		// since the last one.
		if err := admin.ConfigSet(c, "save", "3600 1").Err(); err != nil {
			t.Fatal(err)
		}
		why, _ = Volatile(c, admin)
		admin.ConfigSet(context.Background(), "save", save)
		if !strings.Contains(why, "only RDB snapshots") {
			t.Errorf("with save \"3600 1\" and no AOF: reason %q", why)
		}
	}

	// A user without CONFIG, as on a managed Redis.
	user := fmt.Sprintf("frondtest_noconfig_%d", time.Now().UnixNano())
	if err := admin.Do(c, "ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "-config").Err(); err != nil {
		t.Skipf("cannot create an ACL user: %v", err)
	}
	defer admin.Do(context.Background(), "ACL", "DELUSER", user)
	o := *u.Options
	o.Username, o.Password = user, "pw"
	limited := redis.NewClient(&o)
	defer limited.Close()
	why, err = Volatile(c, limited)
	if err != nil || !strings.Contains(why, "does not say") || !strings.Contains(why, "NOPERM") {
		t.Errorf("CONFIG refused: %q, %v", why, err)
	}
}

// startRedis starts a redis-server of the test's own (testenv.StartRedis:
// AOF synced on every write) and returns a client of it.
func startRedis(t *testing.T) *redis.Client {
	t.Helper()
	r := testenv.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// An AOF is enough only when synced on every write: with everysec or no, a
// crash of the host loses acknowledged INCRBYs, and the ranges they took
// would be handed out again.
func TestVolatile_AppendFsync(t *testing.T) {
	c := startRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := Risk{Refusal: "IDs repeat", Warning: "IDs may repeat", URL: "store"}
	for _, tc := range []struct {
		fsync string
		ok    bool
	}{{"always", true}, {"everysec", false}, {"no", false}} {
		if err := c.ConfigSet(ctx, "appendfsync", tc.fsync).Err(); err != nil {
			t.Fatal(err)
		}
		why, err := Volatile(ctx, c)
		if err != nil {
			t.Fatalf("appendfsync %s: %v", tc.fsync, err)
		}
		_, refused := r.Accept("redis://private", why, false)
		warning, accepted := r.Accept("redis://private", why, true)
		switch {
		case tc.ok && (why != "" || refused != nil || warning != ""):
			t.Errorf("appendfsync %s: reason %q, refused %v, warning %q", tc.fsync, why, refused, warning)
		case !tc.ok && (!strings.Contains(why, "appendfsync "+tc.fsync) || !errors.Is(refused, frond.ErrInvalidArgument) ||
			!strings.Contains(refused.Error(), "appendfsync always") || accepted != nil || !strings.Contains(warning, "frond_allow_volatile=true")):
			t.Errorf("appendfsync %s: reason %q, refused %v, warning %q, %v", tc.fsync, why, refused, warning, accepted)
		}
	}
}

func TestLuaGE(t *testing.T) {
	raw := testenv.Getenv(t, "FROND_TEST_REDIS_URL")
	u, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(u.Options)
	defer c.Close()
	s := redis.NewScript(LuaGE + `return ge(ARGV[1], ARGV[2]) and 1 or 0`)
	for _, tc := range []struct {
		a, b string
		ge   bool
	}{
		{"9", "10", false}, {"10", "9", true}, {"5", "5", true}, {"0", "0", true},
		{"1900000000123456789", "1900000000123456788", true}, // differ below a double's precision
		{"1900000000123456788", "1900000000123456789", false},
	} {
		n, err := s.Run(context.Background(), c, nil, tc.a, tc.b).Int()
		if err != nil {
			t.Fatal(err)
		}
		if (n == 1) != tc.ge {
			t.Errorf("ge(%s, %s) = %v", tc.a, tc.b, n == 1)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"redis://127.0.0.1:6379/15?frond_timeout=2s&frond_prefix=x", "rediss://u:p@h/0?frond_allow_volatile=true", "redis://h?a=%zz", "redis://x?frond_x=;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := Parse(s, "frond_prefix")
		if err != nil {
			if !errors.Is(err, frond.ErrInvalidArgument) {
				t.Fatalf("Parse(%q): %v", s, err)
			}
			return
		}
		if u.Options == nil || u.Timeout <= 0 || strings.Contains(u.Where, "@") {
			t.Fatalf("Parse(%q) = %+v", s, u)
		}
	})
}
