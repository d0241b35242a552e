package main

import (
	"bufio"
	"bytes"
	"context"
	encbin "encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

// Issue 43: one real node, every protocol at once, from one address:
// gRPC calls whose answers are never read (a flow-control window of 0),
// RESP pipelines and HTTP requests of large answers never read, token
// guesses, an idle lease stream. The answers held stay within the node's
// answer budget, another address is served on every protocol meanwhile,
// and once the attackers leave the budget is free and no core stays busy.
func TestE2E_HostileEveryProtocolAtOnce(t *testing.T) {
	const budget = 16 << 20
	s, err := startServerEnv(t, []string{fmt.Sprintf("FROND_LIMITS__ANSWER_BUDGET=%d", budget), "FROND_LIMITS__AUTH_FAILURES=5"},
		t.TempDir(), "--grpc-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0", "--admin-token", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	grpcAddr, respAddr := s.listenAddr("gRPC"), s.respAddr()
	httpAddr := strings.TrimPrefix(s.url, "http://")
	prefix := strings.Repeat("a", 63)
	var attackers []net.Conn
	dial := func(addr string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		attackers = append(attackers, c)
		return c
	}
	// gRPC: 2 connections of 150 calls of about 1 MB each, never read.
	req, _ := proto.Marshal(&frondv1.NextUUIDRequest{Version: 7, N: 10000, Form: "typeid", Prefix: prefix})
	msg := append([]byte{0, 0, 0, 0, 0}, req...)
	encbin.BigEndian.PutUint32(msg[1:5], uint32(len(req)))
	for range 2 {
		c := dial(grpcAddr)
		io.WriteString(c, http2.ClientPreface)
		fr := http2.NewFramer(c, c)
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		for i := range 150 {
			hb.Reset()
			for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", frondv1.IDService_NextUUID_FullMethodName},
				{":authority", grpcAddr}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
				enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
			}
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hb.Bytes(), EndHeaders: true})
			fr.WriteData(uint32(2*i+1), true, msg)
		}
		go func() { // answer pings, read nothing else
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					return
				}
				if p, ok := f.(*http2.PingFrame); ok && !p.IsAck() {
					fr.WritePing(true, p.Data)
				}
			}
		}()
	}
	// RESP: 4 connections of 20 pipelined large UUID commands, never read,
	// and wrong tokens.
	for range 4 {
		c := dial(respAddr)
		go io.WriteString(c, strings.Repeat("UUID VERSION 7 COUNT 10000 FORM typeid PREFIX "+prefix+"\r\n", 20))
	}
	// Token guesses from a third address (the lockout of an address would
	// also stop its other attacks).
	guesser := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}, Timeout: 5 * time.Second}
	guess, err := guesser.Dial("tcp", respAddr)
	if err != nil {
		t.Fatal(err)
	}
	attackers = append(attackers, guess)
	io.WriteString(guess, strings.Repeat("AUTH guess\r\n", 10))
	// HTTP: 20 connections of a large answer each, never read.
	for range 20 {
		c := dial(httpAddr)
		fmt.Fprintf(c, "GET /v1/uuid?version=7&n=10000&form=typeid&prefix=%s HTTP/1.1\r\nHost: x\r\n\r\n", prefix)
	}
	// An idle lease stream.
	lease := dial(grpcAddr)
	io.WriteString(lease, http2.ClientPreface)

	time.Sleep(2 * time.Second)
	// Another address is served on every protocol.
	other := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: other.DialContext}}
	get := func(path string) (int, string) {
		res, err := hc.Get(s.url + path)
		if err != nil {
			t.Fatalf("%s from another address: %v", path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get("/v1/snowflake"); code != 200 {
		t.Fatalf("HTTP from another address while attacked: %d %s", code, body)
	}
	rc, err := other.Dial("tcp", respAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rc.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(rc, "PING\r\n")
	if line, _ := bufio.NewReader(rc).ReadString('\n'); line != "+PONG\r\n" {
		t.Fatalf("RESP from another address while attacked: %q", line)
	}
	gc, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return other.DialContext(ctx, "tcp", a) }))
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := frondv1.NewIDServiceClient(gc).NextSnowflake(ctx, &frondv1.NextSnowflakeRequest{}); err != nil {
		t.Fatalf("gRPC from another address while attacked: %v", err)
	}
	// The answers held stay within the budget; the heap within it and a
	// margin for the node's own working set.
	_, metrics := get("/metrics")
	used, heap := metric(t, metrics, "frond_answer_budget_bytes"), metric(t, metrics, "go_memstats_heap_inuse_bytes")
	refused := metric(t, metrics, "frond_answer_budget_refused_total")
	t.Logf("while attacked: budget %d of %d bytes, %v requests refused, heap in use %d MB", int64(used), budget, refused, int64(heap)>>20)
	if used > budget || refused == 0 {
		t.Fatalf("answers held: %d bytes, with a budget of %d, %v requests refused (the attack fills it)", int64(used), budget, refused)
	}
	if heap > budget+192<<20 {
		t.Fatalf("heap in use %d MB with a budget of %d MB", int64(heap)>>20, budget>>20)
	}
	// The guesses locked their address out: even the right token is refused.
	c, err := guesser.Dial("tcp", respAddr)
	if err != nil {
		t.Fatal(err)
	}
	attackers = append(attackers, c)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "AUTH s3cret\r\n")
	if line, _ := bufio.NewReader(c).ReadString('\n'); !strings.HasPrefix(line, "-RATE_LIMITED") {
		t.Fatalf("the right token after 10 wrong ones from the address: %q", line)
	}

	// The attackers leave: the budget is free, and no core stays busy.
	for _, c := range attackers {
		c.Close()
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, metrics = get("/metrics")
		if metric(t, metrics, "frond_answer_budget_bytes") == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the answer budget still held after the attackers left: %v", metric(t, metrics, "frond_answer_budget_bytes"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	cpu0 := processCPU(t, s.cmd.Process.Pid)
	time.Sleep(2 * time.Second)
	if busy := processCPU(t, s.cmd.Process.Pid) - cpu0; busy > time.Second {
		t.Fatalf("the node used %v of CPU in 2 s after the attackers left", busy)
	}
}

// metric is the value of a metric without labels in a /metrics page.
func metric(t *testing.T, page, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no %s on /metrics", name)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// processCPU is the CPU time process pid has used (Linux /proc).
func processCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // clock ticks of 1/100 s
}
