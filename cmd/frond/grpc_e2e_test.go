package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/frond-id/frond/internal/testenv"
)

// grpcurlPath finds grpcurl (github.com/fullstorydev/grpcurl, installed by
// .ci/services.sh).
func grpcurlPath(t *testing.T) string {
	return testenv.Tool(t, "go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3", "grpcurl")
}

// grpcurl runs "grpcurl -plaintext flags... addr rest..." and returns its
// output and exit status.
func grpcurl(t *testing.T, flags []string, addr string, rest ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(grpcurlPath(t), append(append(append([]string{"-plaintext"}, flags...), addr), rest...)...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("grpcurl %v: %v", cmd.Args, err)
	}
	return string(out), 0
}

// grpcurl as a user types it, against frond serve: reflection lists and
// describes every service without the proto file, the ID methods answer,
// errors carry their canonical code and frond's code, health answers per
// kind, the admin token is the HTTP one, and SIGTERM stops cleanly.
func TestE2E_GRPC_Grpcurl(t *testing.T) {
	s := mustStart(t, t.TempDir(), "--grpc-addr", "127.0.0.1:0", "--admin-token", "s3cret")
	addr := s.listenAddr("gRPC")
	out, code := grpcurl(t, nil, addr, "list")
	for _, want := range []string{"frond.v1.IDService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("grpcurl list: %d %s", code, out)
		}
	}
	if out, code := grpcurl(t, nil, addr, "describe", "frond.v1.IDService"); code != 0 || !strings.Contains(out, "rpc NextSegment") || !strings.Contains(out, "stream") {
		t.Fatalf("grpcurl describe: %d %s", code, out)
	}
	out, code = grpcurl(t, []string{"-d", `{"name":"order","step":1000}`}, addr, "frond.v1.IDService/CreateTag")
	if code == 0 || !strings.Contains(out, "Unauthenticated") || !strings.Contains(out, `"reason": "UNAUTHORIZED"`) {
		t.Fatalf("CreateTag without the token: %d %s", code, out)
	}
	out, code = grpcurl(t, []string{"-H", "authorization: Bearer s3cret", "-d", `{"name":"order","step":1000}`}, addr, "frond.v1.IDService/CreateTag")
	if code != 0 || !strings.Contains(out, `"max_id": "1"`) {
		t.Fatalf("CreateTag: %d %s", code, out)
	}
	var ids struct {
		Tag string
		IDs []string `json:"ids"`
	}
	out, code = grpcurl(t, []string{"-d", `{"tag":"order"}`}, addr, "frond.v1.IDService/NextSegment")
	if code != 0 || json.Unmarshal([]byte(out), &ids) != nil || ids.Tag != "order" || len(ids.IDs) != 1 || ids.IDs[0] != "1" {
		t.Fatalf("NextSegment: %d %s", code, out)
	}
	out, code = grpcurl(t, []string{"-d", `{"tag":"order","n":3}`}, addr, "frond.v1.IDService/NextSegment")
	if code != 0 || json.Unmarshal([]byte(out), &ids) != nil || strings.Join(ids.IDs, " ") != "2 3 4" {
		t.Fatalf("NextSegment n=3: %d %s", code, out)
	}
	// The same sequence over HTTP: one service behind both.
	if id := s.id("/api/segment/get/order"); id != 5 {
		t.Fatalf("HTTP after gRPC: %d, want 5", id)
	}
	out, code = grpcurl(t, []string{"-d", `{"n":2}`}, addr, "frond.v1.IDService/NextSnowflake")
	if code != 0 || json.Unmarshal([]byte(out), &ids) != nil || len(ids.IDs) != 2 {
		t.Fatalf("NextSnowflake: %d %s", code, out)
	}
	a, _ := strconv.ParseInt(ids.IDs[0], 10, 64)
	b, _ := strconv.ParseInt(ids.IDs[1], 10, 64)
	if a < 1<<40 || b <= a {
		t.Fatalf("snowflake IDs %d, %d", a, b)
	}
	out, code = grpcurl(t, []string{"-d", `{"tag":"nope"}`}, addr, "frond.v1.IDService/NextSegment")
	if code == 0 || !strings.Contains(out, "Code: NotFound") || !strings.Contains(out, `"reason": "TAG_NOT_FOUND"`) || !strings.Contains(out, `"code": "tag_not_found"`) {
		t.Fatalf("NextSegment nope: %d %s", code, out)
	}
	out, code = grpcurl(t, []string{"-d", `{"tag":"order","n":-1}`}, addr, "frond.v1.IDService/NextSegment")
	if code == 0 || !strings.Contains(out, "Code: InvalidArgument") {
		t.Fatalf("NextSegment n=-1: %d %s", code, out)
	}
	out, code = grpcurl(t, []string{"-d", `{"tag":"order","n":"many"}`}, addr, "frond.v1.IDService/NextSegment")
	if code == 0 {
		t.Fatalf("NextSegment n=many: %d %s", code, out)
	}
	if id := s.id("/api/segment/get/order"); id != 6 {
		t.Fatalf("refused gRPC calls took IDs: next is %d, want 6", id)
	}
	for _, kind := range []string{"", "segment", "snowflake"} {
		out, code = grpcurl(t, []string{"-d", `{"service":"` + kind + `"}`}, addr, "grpc.health.v1.Health/Check")
		if code != 0 || !strings.Contains(out, `"status": "SERVING"`) {
			t.Fatalf("health %q: %d %s", kind, code, out)
		}
	}
	out, code = grpcurl(t, nil, addr, "frond.v1.IDService/Info")
	if code != 0 || !strings.Contains(out, `"worker_id"`) || !strings.Contains(out, `"twitter"`) {
		t.Fatalf("Info: %d %s", code, out)
	}
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, s.log())
	}
}
