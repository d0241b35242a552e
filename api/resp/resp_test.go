package resp

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/api/apitest"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/service"
	"github.com/frond-id/frond/storetest"
)

var bg = context.Background()

// start serves a service with tag "order" (step 1000) over RESP and returns
// its address.
func start(t testing.TB, o api.Options) (string, *service.Service) {
	t.Helper()
	svc := apitest.Service(t, storetest.NewFaulty(), service.Config{Segment: segment.Settings{FixedStep: true}},
		frond.Tag{Name: "order", MaxID: 1, Step: 1000})
	return serve(t, svc, o), svc
}

// serve serves svc over RESP until the test ends and returns the address.
func serve(t testing.TB, svc *service.Service, o api.Options) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(svc, o)
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// go-redis, as a user would call it, for every command.
func TestServer_GoRedis(t *testing.T) {
	addr, _ := start(t, api.Options{})
	c := dial(t, addr)
	for want := int64(1); want <= 3; want++ {
		if got, err := c.Incr(bg, "order").Result(); err != nil || got != want {
			t.Fatalf("INCR order = %d, %v; want %d", got, err, want)
		}
	}
	ids, err := c.Do(bg, "SEGMENT", "order", "COUNT", "3").Int64Slice()
	if err != nil || len(ids) != 3 || ids[0] != 4 || ids[2] != 6 {
		t.Fatalf("SEGMENT order COUNT 3 = %v, %v", ids, err)
	}
	if id, err := c.Do(bg, "SEGMENT", "order").Int64(); err != nil || id != 7 {
		t.Fatalf("SEGMENT order = %d, %v", id, err)
	}
	if s, err := c.Do(bg, "SEGMENT", "order", "FORM", "base62").Text(); err != nil || s == "" {
		t.Fatalf("SEGMENT order FORM base62 = %q, %v", s, err)
	}
	rs, err := c.Do(bg, "RANGES", "order", "1500").Slice()
	if err != nil || len(rs) < 1 {
		t.Fatalf("RANGES order 1500 = %v, %v", rs, err)
	}
	total := int64(0)
	for _, r := range rs {
		f := r.([]any)
		total += (f[1].(int64) - f[0].(int64)) / f[2].(int64)
	}
	if total != 1500 {
		t.Fatalf("RANGES order 1500 covers %d IDs: %v", total, rs)
	}
	sf, err := c.Do(bg, "SNOWFLAKE").Int64()
	if err != nil || sf <= 0 {
		t.Fatalf("SNOWFLAKE = %d, %v", sf, err)
	}
	sfs, err := c.Do(bg, "SNOWFLAKE", "COUNT", "5").Int64Slice()
	if err != nil || len(sfs) != 5 || sfs[0] <= sf {
		t.Fatalf("SNOWFLAKE COUNT 5 = %v, %v", sfs, err)
	}
	d, err := c.Do(bg, "DECODE", sfs[0]).Slice()
	if err != nil || len(d) != 12 || d[8] != "node" || d[9] != int64(3) {
		t.Fatalf("DECODE = %v, %v", d, err)
	}
	if u, err := c.Do(bg, "UUID", "VERSION", "7").Text(); err != nil || len(u) != 36 || u[14] != '7' {
		t.Fatalf("UUID VERSION 7 = %q, %v", u, err)
	}
	if us, err := c.Do(bg, "UUID", "COUNT", "2").StringSlice(); err != nil || len(us) != 2 {
		t.Fatalf("UUID COUNT 2 = %v, %v", us, err)
	}
	if p, err := c.Ping(bg).Result(); err != nil || p != "PONG" {
		t.Fatalf("PING = %q, %v", p, err)
	}
	if e, err := c.Echo(bg, "hi").Result(); err != nil || e != "hi" {
		t.Fatalf("ECHO = %q, %v", e, err)
	}
	info, err := c.Info(bg).Result()
	if err != nil || !strings.Contains(info, "# Worker") || !strings.Contains(info, "worker_id:3") || !strings.Contains(info, "order:step=") || !strings.Contains(info, "tags_total:1\r\n") {
		t.Fatalf("INFO = %q, %v", info, err)
	}
	if err := c.Do(bg, "CLIENT", "SETNAME", "app").Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Do(bg, "CLIENT", "GETNAME").Text(); err != nil || n != "app" {
		t.Fatalf("CLIENT GETNAME = %q, %v", n, err)
	}
	if n, err := c.Do(bg, "COMMAND", "COUNT").Int(); err != nil || n < 10 {
		t.Fatalf("COMMAND COUNT = %d, %v", n, err)
	}
}

// Errors: the stable code first; a refused command takes no ID.
func TestServer_Errors(t *testing.T) {
	addr, _ := start(t, api.Options{})
	c := dial(t, addr)
	for _, tc := range []struct {
		args []any
		code string
	}{
		{[]any{"INCR", "nope"}, "TAG_NOT_FOUND "},
		{[]any{"INCR", "a b"}, "INVALID_ARGUMENT "},
		{[]any{"SEGMENT", "order", "COUNT", "0"}, "INVALID_ARGUMENT "},
		{[]any{"SEGMENT", "order", "COUNT", "+5"}, "INVALID_ARGUMENT "},
		{[]any{"SEGMENT", "order", "COUNT", "500", "FORM", "bogus"}, "INVALID_ARGUMENT "},
		{[]any{"SEGMENT", "order", "COUNT", "1000001"}, "INVALID_ARGUMENT "},
		{[]any{"SEGMENT", "order", "COLOR", "red"}, "INVALID_ARGUMENT "},
		{[]any{"SNOWFLAKE", "COUNT", "1000", "FORM", "bogus"}, "INVALID_ARGUMENT "},
		{[]any{"UUID", "VERSION", "5"}, "INVALID_ARGUMENT "},
		{[]any{"SERIAL", "pay"}, "SERIAL_NOT_FOUND "},
		{[]any{"DECODE", "-1"}, "INVALID_ARGUMENT "},
		{[]any{"DECODE", "1", "LAYOUT", "nope"}, "INVALID_ARGUMENT "},
		{[]any{"INCR"}, "ERR wrong number of arguments"},
		{[]any{"GET", "order"}, "ERR unknown command 'GET'"},
		{[]any{"SELECT", "1"}, "ERR DB index"},
		{[]any{"HELLO", "3"}, "NOPROTO "},
	} {
		err := c.Do(bg, tc.args...).Err()
		if err == nil || !strings.HasPrefix(err.Error(), tc.code) {
			t.Errorf("%v: %v, want an error starting %q", tc.args, err, tc.code)
		}
	}
	if id, err := c.Incr(bg, "order").Result(); err != nil || id != 1 {
		t.Fatalf("INCR order after the refused commands = %d, %v; want 1 (nothing taken)", id, err)
	}
}

// A pipeline keeps order, and each of its commands is counted (the
// commands of one read run in one call).
func TestServer_Pipeline(t *testing.T) {
	m := api.NewMetrics(api.MetricsOptions{})
	addr, _ := start(t, api.Options{Metrics: m})
	c := dial(t, addr)
	p := c.Pipeline()
	cmds := make([]*redis.IntCmd, 200)
	for i := range cmds {
		cmds[i] = p.Incr(bg, "order")
		if i == 100 {
			p.Do(bg, "NOSUCH")
		}
	}
	if _, err := p.Exec(bg); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("pipeline: %v, want the unknown command's error", err)
	}
	for i, cmd := range cmds {
		if cmd.Val() != int64(i+1) {
			t.Fatalf("reply %d = %d, want %d", i, cmd.Val(), i+1)
		}
	}
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`frond_requests_total{operation="incr",protocol="resp"} 200`,
		`frond_request_duration_seconds_count{operation="incr",protocol="resp"} 200`,
		`frond_requests_total{operation="unknown",protocol="resp"} 1`,
	} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// AUTH takes the admin token.
func TestServer_Auth(t *testing.T) {
	addr, _ := start(t, api.Options{AdminToken: "s3cret"})
	c := dial(t, addr)
	if err := c.Do(bg, "AUTH", "wrong").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
		t.Fatalf("AUTH wrong: %v", err)
	}
	if err := c.Do(bg, "AUTH", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	authed := redis.NewClient(&redis.Options{Addr: addr, Password: "s3cret"})
	defer authed.Close()
	if _, err := authed.Incr(bg, "order").Result(); err != nil {
		t.Fatalf("a client configured with the token: %v", err)
	}
}

// An oversized or malformed request closes its connection only; the
// connections beyond Conn.MaxConns are refused.
func TestServer_Limits(t *testing.T) {
	addr, _ := start(t, api.Options{MaxRequest: 64 << 10, Conn: api.ConnPolicy{MaxConns: 3}})
	big, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	big.Write([]byte("*2\r\n$4\r\nINCR\r\n$1000000\r\n"))
	chunk := []byte(strings.Repeat("x", 32<<10))
	for range 8 {
		if _, err := big.Write(chunk); err != nil {
			break
		}
	}
	big.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(big)
	line, err := br.ReadString('\n')
	if err == nil && strings.HasPrefix(line, "-ERR request too large") {
		_, err = br.ReadString('\n') // then closed
	}
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("an oversized request: %q, %v; want the connection closed", line, err)
	}

	bad, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	bad.Write([]byte("*1\r\n$x\r\n"))
	bad.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := bufio.NewReader(bad).ReadString('\n'); err != nil || !strings.HasPrefix(line, "-ERR") {
		t.Fatalf("malformed request: %q, %v", line, err)
	}

	c := dial(t, addr)
	if err := c.Ping(bg).Err(); err != nil {
		t.Fatalf("another connection after the bad ones: %v", err)
	}
	// The bad connections' places are freed once the server has closed
	// them, which may come just after their client read the error.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		info, err := c.Info(bg, "server").Result()
		if err == nil && strings.Contains(info, "connected_clients:1\r\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bad connections still count: %q, %v", info, err)
		}
	}
	var held []net.Conn
	defer func() {
		for _, h := range held {
			h.Close()
		}
	}()
	for range 3 {
		h, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, h)
	}
	last := held[len(held)-1]
	last.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, _ := bufio.NewReader(last).ReadString('\n'); !strings.Contains(line, "max number of clients") {
		t.Fatalf("a connection beyond Conn.MaxConns: %q", line)
	}
}

// COUNT is a whole number from 1 written in digits only, as on /v1
// (leading zeros allowed): nothing else is read as one.
func FuzzCount(f *testing.F) {
	for _, s := range []string{"1", "10", "0", "-1", "+5", " 5", "05", "1e3", "", "9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, err := count(map[string]string{"COUNT": raw})
		v, perr := strconv.ParseInt(raw, 10, 64)
		ok := perr == nil && v >= 1 && strings.Trim(raw, "0123456789") == ""
		if ok != (err == nil) || ok && n != v {
			t.Fatalf("count(%q) = %d, %v", raw, n, err)
		}
		if _, err := options([][]byte{[]byte("COUNT"), []byte(raw)}, "COUNT"); err != nil {
			t.Fatalf("options(COUNT %q): %v", raw, err)
		}
	})
}

// TAG and REVEAL need AUTH with the admin token first; then they
// administer tags as the JSON API does.
func TestServer_Admin(t *testing.T) {
	addr, svc := start(t, api.Options{AdminToken: "s3cret"})
	c := dial(t, addr)
	if err := c.Do(bg, "TAG", "LIST").Err(); err == nil || !strings.HasPrefix(err.Error(), "UNAUTHORIZED ") {
		t.Fatalf("TAG LIST without AUTH: %v", err)
	}
	if err := c.Do(bg, "TAG", "CREATE", "x", "STEP", "10").Err(); err == nil || !strings.HasPrefix(err.Error(), "UNAUTHORIZED ") {
		t.Fatalf("TAG CREATE without AUTH: %v", err)
	}
	if _, err := svc.Tag(bg, "x"); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("a refused TAG CREATE created the tag: %v", err)
	}
	// AUTH on one connection admits that connection.
	conn := c.Conn()
	defer conn.Close()
	if err := conn.Do(bg, "AUTH", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := conn.Do(bg, "TAG", "LIST").Slice(); err != nil || len(n) != 1 {
		t.Fatalf("TAG LIST after AUTH: %v, %v", n, err)
	}

	a := redis.NewClient(&redis.Options{Addr: addr, Password: "s3cret"})
	defer a.Close()
	got, err := a.Do(bg, "TAG", "CREATE", "x", "STEP", "10", "MAXID", "500", "DESCRIPTION", "two words").Slice()
	if err != nil || len(got) != 14 || got[1] != "x" || got[3] != int64(500) || got[5] != int64(10) || got[7] != "two words" || got[11] != "segment" || got[13] != "plain" {
		t.Fatalf("TAG CREATE: %v, %v", got, err)
	}
	// A page at a time: COUNT tags after AFTER.
	if page, err := a.Do(bg, "TAG", "LIST", "COUNT", "1").Slice(); err != nil || len(page) != 1 || page[0].([]any)[1] != "order" {
		t.Fatalf("TAG LIST COUNT 1: %v, %v", page, err)
	}
	if page, err := a.Do(bg, "TAG", "LIST", "AFTER", "order", "COUNT", "5").Slice(); err != nil || len(page) != 1 || page[0].([]any)[1] != "x" {
		t.Fatalf("TAG LIST AFTER order: %v, %v", page, err)
	}
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"TAG", "CREATE", "x", "STEP", "10"}, "TAG_EXISTS "},
		{[]any{"TAG", "CREATE", "y"}, "INVALID_ARGUMENT "},
		{[]any{"TAG", "CREATE", "y", "STEP", "ten"}, "INVALID_ARGUMENT "},
		{[]any{"TAG", "CREATE", "y", "STEP", "0"}, "INVALID_ARGUMENT "},
		{[]any{"TAG", "UPDATE", "x", "MAXID", "2"}, "WOULD_REISSUE "},
		{[]any{"TAG", "GET", "nope"}, "TAG_NOT_FOUND "},
		{[]any{"TAG", "LIST", "COUNT", "0"}, "INVALID_ARGUMENT invalid argument: COUNT 0: must be a whole number from 1 to 10000"},
		{[]any{"TAG", "LIST", "AFTER"}, "INVALID_ARGUMENT "},
		{[]any{"TAG", "LIST", "LIMIT", "3"}, "INVALID_ARGUMENT invalid argument: TAG LIST [AFTER name] [COUNT n]: unknown option"},
		{[]any{"TAG", "DROP", "x"}, "ERR unknown subcommand"},
		{[]any{"TAG", "GET"}, "ERR wrong number of arguments"},
		{[]any{"REVEAL", "segment", "opaque", "abc"}, "INVALID_ARGUMENT "},
		{[]any{"REVEAL", "segment", "base62", "1", "x"}, "INVALID_ARGUMENT invalid argument: key version"},
		{[]any{"REVEAL", "segment", "base62", "1", "0", "0"}, "INVALID_ARGUMENT invalid argument: option \"0\""},
		{[]any{"REVEAL", "segment", "base62", "1", "0", "PREFIX", "a", "TAG", "t", "x"}, "ERR wrong number of arguments"},
		{[]any{"REVEAL", "segment", "base62", "ord_1", "PREFIX", "usr"}, "INVALID_ARGUMENT invalid argument: \"ord_1\" does not carry prefix \"usr\""},
	} {
		if err := a.Do(bg, tc.args...).Err(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %s...", tc.args, err, tc.want)
		}
	}
	// The spec's vector "valid-uuidv7"; a prefix checked.
	if got, err := a.Do(bg, "REVEAL", "uuid", "typeid", "prefix_01h455vb4pex5vsknk084sn02q", "PREFIX", "prefix").Text(); err != nil || got != "01890a5d-ac96-774b-bcce-b302099a8057" {
		t.Fatalf("REVEAL uuid typeid: %q, %v", got, err)
	}
	if got, err := a.Do(bg, "REVEAL", "segment", "base62", "ord_00000000001", "0", "PREFIX", "ord").Int64(); err != nil || got != 1 {
		t.Fatalf("REVEAL with a prefix: %d, %v", got, err)
	}
	if got, err := a.Do(bg, "TAG", "UPDATE", "x", "STEP", "20").Slice(); err != nil || got[5] != int64(20) {
		t.Fatalf("TAG UPDATE: %v, %v", got, err)
	}
	if got, err := a.Do(bg, "TAG", "GET", "x").Slice(); err != nil || got[5] != int64(20) || got[3] != int64(500) {
		t.Fatalf("TAG GET: %v, %v", got, err)
	}
	if id, err := a.Incr(bg, "x").Result(); err != nil || id != 500 {
		t.Fatalf("INCR x: %d, %v", id, err)
	}
	if err := a.Do(bg, "TAG", "DELETE", "x").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Tag(bg, "x"); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("after TAG DELETE: %v", err)
	}
}

// Commands are counted and timed per command, errors per code, under
// protocol "resp".
func TestServer_Metrics(t *testing.T) {
	m := api.NewMetrics(api.MetricsOptions{})
	addr, _ := start(t, api.Options{Metrics: m})
	c := dial(t, addr)
	c.Incr(bg, "order")
	c.Incr(bg, "order")
	c.Incr(bg, "nope")
	c.Do(bg, "NOSUCH")
	c.Do(bg, "SEGMENT", "order", "COUNT", "x")
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`frond_requests_total{operation="incr",protocol="resp"} 3`,
		`frond_request_duration_seconds_count{operation="incr",protocol="resp"} 3`,
		`frond_requests_total{operation="unknown",protocol="resp"} 1`,
		`frond_errors_total{code="tag_not_found",protocol="resp"} 1`,
		`frond_errors_total{code="not_found",protocol="resp"} 1`,
		`frond_errors_total{code="invalid_argument",protocol="resp"} 1`,
	} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// With tokens configured, TOKEN sets the connection's tag token.
func TestServer_TagToken(t *testing.T) {
	svc := apitest.Service(t, storetest.NewFaulty(), service.Config{Tokens: map[string][]string{"t1": {"order"}}},
		frond.Tag{Name: "order", MaxID: 1, Step: 10})
	conn := dial(t, serve(t, svc, api.Options{})).Conn()
	defer conn.Close()
	if err := conn.Incr(bg, "order").Err(); err == nil || !strings.HasPrefix(err.Error(), "FORBIDDEN ") {
		t.Fatalf("INCR without a token: %v", err)
	}
	conn.Do(bg, "TOKEN", "t1")
	if id, err := conn.Incr(bg, "order").Result(); err != nil || id != 1 {
		t.Fatalf("INCR with the token: %d, %v", id, err)
	}
	if err := conn.Do(bg, "RANGES", "order", "3").Err(); err != nil {
		t.Fatalf("RANGES with the token: %v", err)
	}
}

// The schemes of issue 33 over RESP.
func TestServer_Schemes(t *testing.T) {
	addr, svc := start(t, api.Options{})
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	defer c.Close()
	if got, err := c.Do(bg, "UUID", "VERSION", "5", "NAMESPACE", "dns", "NAME", "example.com").Text(); err != nil || got != "cfbff0d1-9375-5685-968c-48ce8b15ae17" {
		t.Fatalf("UUID v5: %q, %v", got, err)
	}
	if got, err := c.Do(bg, "UUID", "VERSION", "1", "COUNT", "2").StringSlice(); err != nil || len(got) != 2 || got[0][14] != '1' || got[0] == got[1] {
		t.Fatalf("UUID v1: %q, %v", got, err)
	}
	if got, err := c.Do(bg, "UUID", "VERSION", "7", "FORM", "typeid", "PREFIX", "user").Text(); err != nil || !strings.HasPrefix(got, "user_") || len(got) != 31 {
		t.Fatalf("UUID typeid: %q, %v", got, err)
	}
	if _, err := svc.CreateTag(bg, frond.Tag{Name: "mst", MaxID: 1, Step: 1000, Mapping: frond.MappingMist}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Do(bg, "SEGMENT", "mst", "FORM", "mist").Int64(); err != nil || got>>16 != 1 {
		t.Fatalf("SEGMENT mist: %d, %v", got, err)
	}
	if got, err := c.Do(bg, "SEGMENT", "order", "FORM", "base32", "PREFIX", "ord").Text(); err != nil || got != "ord_0000000000001" {
		t.Fatalf("SEGMENT prefix: %q, %v", got, err)
	}
	if got, err := c.Do(bg, "SNOWFLAKE", "FORM", "friendly").Text(); err != nil || strings.Count(got, "-") != 2 {
		t.Fatalf("SNOWFLAKE friendly: %q, %v", got, err)
	}
	for _, args := range [][]any{
		{"UUID", "VERSION", "5", "NAMESPACE", "dns"}, {"UUID", "VERSION", "5", "NAMESPACE", "dns", "NAME", ""},
		{"UUID", "VERSION", "2"}, {"UUID", "FORM", "typeid"}, {"SEGMENT", "order", "PREFIX", "ord"},
		{"SNOWFLAKE", "FORM", "mist"}, {"SEGMENT", "order", "FORM", "friendly"},
	} {
		if err := c.Do(bg, args...).Err(); err == nil || !strings.HasPrefix(err.Error(), "INVALID_ARGUMENT ") {
			t.Errorf("%v: %v", args, err)
		}
	}
	if got, err := c.Incr(bg, "order").Result(); err != nil || got != 2 {
		t.Fatalf("the refusals took IDs: INCR %d, %v", got, err)
	}
}
