package main

import (
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

// The docs' literal examples of output are the server's output: each is
// asked of a fresh server and must appear in its page as written (the docs
// showed a "load segment:" prefix the server does not send).
func TestDocs_Examples(t *testing.T) {
	s := mustStart(t, t.TempDir(), "--grpc-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0")
	conn, err := grpc.NewClient(s.listenAddr("gRPC"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rc := redis.NewClient(&redis.Options{Addr: s.respAddr(), Protocol: 2})
	defer rc.Close()
	ctx := t.Context()

	_, body := s.get("/v1/segment/x")
	_, bounds := s.get("/v1/bounds?from=2026-11-01&to=2026-12-01")
	_, grpcErr := frondv1.NewIDServiceClient(conn).NextSegment(ctx, &frondv1.NextSegmentRequest{Tag: "nope"})
	respErr := rc.Incr(ctx, "nope").Err()
	if grpcErr == nil || respErr == nil {
		t.Fatalf("no errors: %v, %v", grpcErr, respErr)
	}
	for _, ex := range []struct{ doc, want string }{
		{"api.md", body},
		{"kinds.md", "# " + strings.TrimSpace(bounds) + "\n"},
		{"grpc.md", "  Message: " + status.Convert(grpcErr).Message() + "\n"},
		{"resp.md", "`-" + respErr.Error() + "`"},
	} {
		b, err := os.ReadFile("../../docs/" + ex.doc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), ex.want) {
			t.Errorf("docs/%s does not show the server's output:\n%s", ex.doc, ex.want)
		}
	}
}
