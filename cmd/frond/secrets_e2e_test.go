package main

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

// Issue 43, item 8: a store and a registry of each network backend whose
// URL carries a password, with the server unreachable. The etcd client's
// errors named their endpoints with the password ("[http://user:pw@host]")
// and frond returned them without a token on /v1/info, /readyz, the ID
// routes, in the log, ...; every backend error now passes through one
// masking step that knows every configured secret (secret.Hide: lazystore
// for the stores, registry.Protocol for the registries, secret.Handler for
// the log). Each backend's real unreachable-server error is fed here
// through every output: HTTP (info, readiness, the ID routes of Leaf,
// TinyID-style and v1, tags, metrics, the dashboard's stream), RESP, gRPC,
// the log, frond audit and frond stores show.
func TestE2E_PasswordsNeverShown(t *testing.T) {
	for _, b := range []struct{ name, url string }{
		{"etcd", "etcd://frond:zqpw9sec@127.0.0.1:1?frond_timeout=300ms"},
		{"redis", "redis://frond:zqpw8red@127.0.0.1:1/0"},
		{"mysql", "mysql://root:zqpw7my%21sql@127.0.0.1:1/test"},
		{"postgres", "postgres://frond:zqpw6pgx@127.0.0.1:1/test?sslmode=disable"},
	} {
		t.Run(b.name, func(t *testing.T) {
			pw := b.url[strings.Index(b.url, ":zqpw")+1 : strings.Index(b.url, "@")]
			forms := []string{pw, strings.ReplaceAll(pw, "%21", "!")}
			var out strings.Builder
			// The store: a node serves without it (lazystore); the
			// registry: a node may not start without it (a fresh data
			// directory has no record), and then its start error is the
			// output.
			for _, flag := range []string{"--store", "--registry"} {
				dir := t.TempDir()
				s, err := startServerEnv(t, []string{"FROND_SEGMENT__FAIL_FAST=100ms"}, dir,
					flag, b.url, "--grpc-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0")
				if err != nil {
					out.WriteString(flag + ": start: " + err.Error() + "\n")
					continue
				}
				everyOutput(t, s, &out)
				s.stop(syscall.SIGTERM)
				for _, argv := range [][]string{
					{"audit", "--data-dir", dir, flag, b.url, "--sample", "0"},
					{"stores", "show", "--data-dir", dir, flag, b.url},
				} {
					_, stdout, stderr := runCLI(t, nil, argv...)
					out.WriteString(strings.Join(argv[:2], " ") + ": " + stdout + stderr + "\n")
				}
			}
			text := out.String()
			for _, f := range forms {
				if strings.Contains(text, f) {
					t.Fatalf("the %s password %q shows:\n%s", b.name, f, text)
				}
			}
			if !strings.Contains(text, "127.0.0.1:1") {
				t.Fatalf("nothing names the unreachable %s; did the test reach it?\n%s", b.name, text)
			}
		})
	}
}

// everyOutput writes to out what every output of s answers: HTTP (info,
// readiness, the ID routes of Leaf, TinyID-style and v1, tags, metrics,
// the dashboard's stream), RESP, gRPC and the log.
func everyOutput(t *testing.T, s *server, out *strings.Builder) {
	t.Helper()
	for _, p := range []string{"/v1/info", "/readyz", "/readyz/segment", "/readyz/snowflake", "/v1/segment/order",
		"/api/segment/get/order", "/v1/snowflake", "/api/snowflake/get/x", "/v1/tags", "/v1/tags/order", "/metrics"} {
		_, body := s.get(p)
		out.WriteString(p + ": " + body + "\n")
	}
	out.WriteString("/ui/events: " + firstEvent(t, s.url+"/ui/events") + "\n")
	out.WriteString("RESP: " + respSay(t, s.respAddr(), "INCR order\r\nSNOWFLAKE\r\nTAG GET order\r\nINFO\r\n") + "\n")
	conn, err := grpc.NewClient(s.listenAddr("gRPC"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	gc := frondv1.NewIDServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = gc.NextSegment(ctx, &frondv1.NextSegmentRequest{Tag: "order"})
	out.WriteString("gRPC NextSegment: " + errText(err) + "\n")
	_, err = gc.NextSnowflake(ctx, &frondv1.NextSnowflakeRequest{})
	out.WriteString("gRPC NextSnowflake: " + errText(err) + "\n")
	info, err := gc.Info(ctx, &frondv1.InfoRequest{})
	out.WriteString("gRPC Info: " + info.String() + errText(err) + "\n")
	time.Sleep(500 * time.Millisecond) // the background retries' log lines
	out.WriteString("log: " + s.log() + "\n")
}

// firstEvent reads the first event of the event stream at u (or what came
// within 5 s).
func firstEvent(t *testing.T, u string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		if sc.Text() == "" && b.Len() > 0 {
			break
		}
		b.WriteString(sc.Text() + "\n")
	}
	return resp.Status + "\n" + b.String()
}

// respSay writes cmds to the RESP listener at addr and returns what came
// back within a second of the last byte.
func respSay(t *testing.T, addr, cmds string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte(cmds))
	var b strings.Builder
	buf := make([]byte, 64<<10)
	for {
		c.SetReadDeadline(time.Now().Add(time.Second))
		n, err := c.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
