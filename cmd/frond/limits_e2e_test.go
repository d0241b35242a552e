package main

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// limits.* through frond serve: a listener over max_connections answers
// 503 and closes; over the rate, 429 with Retry-After; the probes stay
// open.
func TestE2E_Limits(t *testing.T) {
	s, err := startServerEnv(t, []string{"FROND_LIMITS__MAX_CONNECTIONS=1", "FROND_LIMITS__RATE=1", "FROND_LIMITS__BURST=1"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(s.url, "http://")
	// The start-up probes of the test harness may still hold a keep-alive
	// connection: wait until one idle connection fills the listener.
	deadline := time.Now().Add(10 * time.Second)
	for {
		idle, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if strings.HasPrefix(line, "HTTP/1.1 503") {
			idle.Close()
			break
		}
		idle.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a second connection over max_connections=1 read %q", line)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path string) *http.Response {
		t.Helper()
		var resp *http.Response
		for range 50 { // the refused connection's place comes back when the server sees the close
			r, err := cl.Get(s.url + path)
			if err == nil && r.StatusCode != http.StatusServiceUnavailable {
				resp = r
				break
			}
			if err == nil {
				r.Body.Close()
			}
			time.Sleep(20 * time.Millisecond)
		}
		if resp == nil {
			t.Fatalf("GET %s: never admitted", path)
		}
		resp.Body.Close()
		return resp
	}
	codes := []int{}
	for range 3 {
		codes = append(codes, get("/v1/snowflake").StatusCode)
	}
	if codes[2] != http.StatusTooManyRequests {
		t.Fatalf("three IDs at a rate of 1/s, burst 1: %v", codes)
	}
	if r := get("/healthz"); r.StatusCode != 200 {
		t.Fatalf("/healthz: %d", r.StatusCode)
	}
}

// The connection policy's keys reach every listener: with
// limits.idle_timeout 300ms an idle keep-alive connection is closed by the
// server, and with limits.max_header_bytes 2048 a request with 10 KiB of
// headers is refused (431), which the default 16 KiB lets through.
func TestE2E_ConnectionPolicyKeys(t *testing.T) {
	s, err := startServerEnv(t, []string{"FROND_LIMITS__IDLE_TIMEOUT=300ms", "FROND_LIMITS__MAX_HEADER_BYTES=2048"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(s.url, "http://")
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz: %v, %v", resp, err)
	}
	resp.Body.Close()
	start := time.Now()
	if _, err := r.ReadByte(); err == nil {
		t.Fatal("the server wrote on an idle connection")
	}
	if idle := time.Since(start); idle < 200*time.Millisecond || idle > 5*time.Second {
		t.Fatalf("the idle connection was closed after %v; want about 300ms", idle)
	}
	big, err := http.NewRequest("GET", s.url+"/healthz", nil)
	if err != nil {
		t.Fatal(err)
	}
	big.Header.Set("X-Padding", strings.Repeat("a", 10<<10))
	resp, err = http.DefaultClient.Do(big)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("10 KiB of headers over limits.max_header_bytes 2048: %d", resp.StatusCode)
	}
}
