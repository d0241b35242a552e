package grpcapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/api/apitest"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/service"
	"github.com/frond-id/frond/storetest"
)

var bg = context.Background()

// testStore is a memstore that can be taken down, or made to hang until
// released.
type fixture struct {
	svc   *service.Service
	srv   *Server
	store *storetest.Faulty
	m     *api.Metrics
	conn  *grpc.ClientConn
	c     frondv1.IDServiceClient
}

// start serves a service with tag "order" (step 1000) and a serial "pay"
// over gRPC on a real TCP port.
func start(t testing.TB, o api.Options, configure ...func(*service.Config)) *fixture {
	t.Helper()
	st := storetest.NewFaulty()
	m := api.NewMetrics(api.MetricsOptions{})
	cfg := service.Config{Segment: segment.Settings{FixedStep: true, FailFast: -1},
		ObfuscationKey: []byte("sixteen bytes at the very least"),
		Serials:        map[string]service.SerialConfig{"pay": {Template: "P{time:yyyyMMdd}{seq:6}", Source: "segment"}}}
	for _, f := range configure {
		f(&cfg)
	}
	svc := apitest.Service(t, st, cfg, frond.Tag{Name: "order", MaxID: 1, Step: 1000}, frond.Tag{Name: "pay", MaxID: 1, Step: 1000})
	m.Attach(svc)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Metrics = m
	s := New(svc, o)
	go s.Serve(ln)
	t.Cleanup(func() { s.Shutdown(bg) })
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &fixture{svc: svc, srv: s, store: st, m: m, conn: conn, c: frondv1.NewIDServiceClient(conn)}
}

// wantCode checks err's canonical code and frond's stable code in its
// ErrorInfo, and returns the RetryInfo's delay (0: none).
func wantCode(t *testing.T, err error, c codes.Code, code string) time.Duration {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != c {
		t.Fatalf("error %v: want code %v", err, c)
	}
	var info *errdetails.ErrorInfo
	var retry time.Duration
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			info = d
		case *errdetails.RetryInfo:
			retry = d.GetRetryDelay().AsDuration()
		}
	}
	if code == "" {
		return retry
	}
	if info == nil || info.GetReason() != strings.ToUpper(code) || info.GetMetadata()["code"] != code || info.GetDomain() != Domain {
		t.Fatalf("error %v: details %v, want reason %s", err, st.Details(), strings.ToUpper(code))
	}
	return retry
}

func issued(svc *service.Service, tag string) uint64 {
	for _, st := range svc.SegmentStats() {
		if st.Tag == tag {
			return uint64(st.Issued)
		}
	}
	return 0
}

func TestGRPC_IDs(t *testing.T) {
	f := start(t, api.Options{})
	one, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order"})
	if err != nil || len(one.Ids) != 1 || one.Ids[0] != 1 || one.Tag != "order" || one.Form != "number" || len(one.IdStrs) != 0 {
		t.Fatalf("NextSegment: %v, %v", one, err)
	}
	three, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order", N: 3})
	if err != nil || len(three.Ids) != 3 || three.Ids[0] != 2 || three.Ids[2] != 4 {
		t.Fatalf("NextSegment n=3: %v, %v", three, err)
	}
	text, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order", N: 2, Form: "base62"})
	if err != nil || len(text.Ids) != 0 || len(text.IdStrs) != 2 || text.Form != "base62" {
		t.Fatalf("NextSegment base62: %v, %v", text, err)
	}
	rs, err := f.c.NextSegmentRanges(bg, &frondv1.NextSegmentRangesRequest{Tag: "order", N: 10})
	if err != nil || rs.Count != 10 || len(rs.Ranges) != 1 || rs.Ranges[0].Start != 7 || rs.Ranges[0].End != 17 || rs.Ranges[0].Count != 10 {
		t.Fatalf("NextSegmentRanges: %v, %v", rs, err)
	}
	sf, err := f.c.NextSnowflake(bg, &frondv1.NextSnowflakeRequest{N: 2})
	if err != nil || len(sf.Ids) != 2 || sf.Ids[1] <= sf.Ids[0] {
		t.Fatalf("NextSnowflake: %v, %v", sf, err)
	}
	d, err := f.c.Decode(bg, &frondv1.DecodeRequest{Id: sf.Ids[0]})
	if err != nil || d.Node != 3 || d.Id != sf.Ids[0] || d.Time.AsTime().IsZero() {
		t.Fatalf("Decode: %v, %v", d, err)
	}
	u, err := f.c.NextUUID(bg, &frondv1.NextUUIDRequest{Version: 7, N: 2})
	if err != nil || u.Version != 7 || len(u.Uuids) != 2 || u.Uuids[0][14] != '7' {
		t.Fatalf("NextUUID: %v, %v", u, err)
	}
	u, err = f.c.NextUUID(bg, &frondv1.NextUUIDRequest{})
	if err != nil || u.Version != 4 || len(u.Uuids) != 1 {
		t.Fatalf("NextUUID default: %v, %v", u, err)
	}
	sr, err := f.c.NextSerial(bg, &frondv1.NextSerialRequest{Name: "pay", N: 2})
	if err != nil || len(sr.Serials) != 2 || !strings.HasPrefix(sr.Serials[0], "P") || sr.Serials[0] == sr.Serials[1] {
		t.Fatalf("NextSerial: %v, %v", sr, err)
	}
	info, err := f.c.Info(bg, &frondv1.InfoRequest{})
	if err != nil || info.GetWorkerId() != 3 || info.WorkerId == nil || !info.Issuing || info.Layout.GetName() == "" || info.MaxBatch != service.MaxBatch {
		t.Fatalf("Info: %v, %v", info, err)
	}
	// As /v1/info: the time reserved ahead of the clock in the registry.
	if w := f.svc.WorkerInfo(); info.ReservedAheadNs == 0 || info.ReservedAheadNs > int64(w.ReservedAhead)+int64(time.Second) {
		t.Fatalf("Info reserved_ahead_ns %d; the service says %v", info.ReservedAheadNs, w.ReservedAhead)
	}
}

// Bad input is refused with INVALID_ARGUMENT or NOT_FOUND and takes no ID.
func TestGRPC_Errors(t *testing.T) {
	f := start(t, api.Options{})
	f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order"})
	before := issued(f.svc, "order")
	_, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order", N: -1})
	wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)
	_, err = f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order", N: service.MaxBatch + 1})
	wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)
	_, err = f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order", Form: "bogus"})
	wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)
	_, err = f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "no/such tag"})
	wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)
	if after := issued(f.svc, "order"); after != before {
		t.Fatalf("refused requests took IDs: %d then %d", before, after)
	}
	_, err = f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "nope"})
	if retry := wantCode(t, err, codes.NotFound, frond.CodeTagNotFound); retry != 0 {
		t.Fatalf("tag_not_found advises a retry after %v", retry)
	}
	if !strings.Contains(status.Convert(err).Message(), "create the tag first") {
		t.Fatalf("message without hint: %v", err)
	}
	_, err = f.c.NextSerial(bg, &frondv1.NextSerialRequest{Name: "nope"})
	wantCode(t, err, codes.NotFound, frond.CodeSerialNotFound)
	_, err = f.c.NextUUID(bg, &frondv1.NextUUIDRequest{Version: 5})
	wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)
	_, err = f.c.Decode(bg, &frondv1.DecodeRequest{Id: -1})
	wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)
	_, err = f.c.NextSegmentRanges(bg, &frondv1.NextSegmentRangesRequest{Tag: "order", N: service.MaxRangesBatch + 1})
	wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)

	// The store down, a tag with no buffer: UNAVAILABLE with a retry time.
	f.store.SetDown(true)
	_, err = f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "other"})
	if retry := wantCode(t, err, codes.Unavailable, frond.CodeStoreUnavailable); retry != time.Second {
		t.Fatalf("store_unavailable: retry %v, want 1s", retry)
	}
	f.store.SetDown(false)

	// A request over the size bound: RESOURCE_EXHAUSTED from grpc itself.
	_, err = f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: strings.Repeat("x", DefaultMaxRequest)})
	wantCode(t, err, codes.ResourceExhausted, "")

	body := scrape(t, f.m)
	for _, want := range []string{
		`frond_errors_total{code="invalid_argument",protocol="grpc"} 7`,
		`frond_errors_total{code="tag_not_found",protocol="grpc"} 1`,
		`frond_errors_total{code="store_unavailable",protocol="grpc"} 1`,
		`frond_requests_total{operation="/frond.v1.IDService/NextSegment",protocol="grpc"} 7`,
		`frond_request_duration_seconds_count{operation="/frond.v1.IDService/NextSegment",protocol="grpc"} 7`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
}

func scrape(t *testing.T, m *api.Metrics) string {
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	return w.Body.String()
}

// Every error of the service has a canonical code; none is UNKNOWN.
func TestGRPC_CodeOf(t *testing.T) {
	all := []string{frond.CodeInvalidArgument, frond.CodeTagNotFound, frond.CodeSerialNotFound, frond.CodeTagExists,
		frond.CodeWouldReissue, frond.CodeTagExhausted, frond.CodeStoreUnavailable, frond.CodeClockBackwards,
		frond.CodeUnreserved, frond.CodeLayoutExpired, frond.CodeNoWorkerID, frond.CodeWorkerLost, frond.CodeClockSkew,
		frond.CodeUnavailable, frond.CodeSeqOverflow, frond.CodeInternal, frond.CodeForbidden, frond.CodeUnauthorized, frond.CodeNotFound, frond.CodeTooLarge}
	for _, c := range all {
		if codeOf(c) == codes.Unknown {
			t.Errorf("%s has no canonical code", c)
		}
	}
	if codeOf(frond.CodeClockBackwards) != codes.FailedPrecondition || codeOf(frond.CodeUnreserved) != codes.Unavailable {
		t.Error("clock behind must be FAILED_PRECONDITION and registry_behind UNAVAILABLE")
	}
}

func TestGRPC_Admin(t *testing.T) {
	f := start(t, api.Options{AdminToken: "s3cret"})
	_, err := f.c.ListTags(bg, &frondv1.ListTagsRequest{})
	wantCode(t, err, codes.Unauthenticated, frond.CodeUnauthorized)
	wrong := metadata.AppendToOutgoingContext(bg, "authorization", "Bearer nope")
	_, err = f.c.CreateTag(wrong, &frondv1.CreateTagRequest{Name: "x", Step: ptr[int64](10)})
	wantCode(t, err, codes.Unauthenticated, frond.CodeUnauthorized)
	if _, err := f.svc.Tag(bg, "x"); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("a refused CreateTag created the tag: %v", err)
	}
	ctx := metadata.AppendToOutgoingContext(bg, "authorization", "Bearer s3cret")
	_, err = f.c.CreateTag(ctx, &frondv1.CreateTagRequest{Name: "x"})
	wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)
	tag, err := f.c.CreateTag(ctx, &frondv1.CreateTagRequest{Name: "x", Step: ptr[int64](10), MaxId: ptr[int64](500), Description: "d"})
	if err != nil || tag.Name != "x" || tag.MaxId != 500 || tag.Step != 10 || tag.Description != "d" {
		t.Fatalf("CreateTag: %v, %v", tag, err)
	}
	_, err = f.c.CreateTag(ctx, &frondv1.CreateTagRequest{Name: "x", Step: ptr[int64](10)})
	wantCode(t, err, codes.AlreadyExists, frond.CodeTagExists)
	tag, err = f.c.UpdateTag(ctx, &frondv1.UpdateTagRequest{Name: "x", Step: ptr[int64](20)})
	if err != nil || tag.Step != 20 || tag.MaxId != 500 {
		t.Fatalf("UpdateTag: %v, %v", tag, err)
	}
	_, err = f.c.UpdateTag(ctx, &frondv1.UpdateTagRequest{Name: "x", MaxId: ptr[int64](2)})
	wantCode(t, err, codes.FailedPrecondition, frond.CodeWouldReissue)
	list, err := f.c.ListTags(ctx, &frondv1.ListTagsRequest{})
	if err != nil || len(list.Tags) != 3 || list.NextPageToken != "" {
		t.Fatalf("ListTags: %v, %v", list, err)
	}
	// A page at a time: the token of one is the next one's start.
	list, err = f.c.ListTags(ctx, &frondv1.ListTagsRequest{PageSize: 2})
	if err != nil || len(list.Tags) != 2 || list.NextPageToken != list.Tags[1].Name {
		t.Fatalf("ListTags, 2 a page: %v, %v", list, err)
	}
	last, err := f.c.ListTags(ctx, &frondv1.ListTagsRequest{PageSize: 2, PageToken: list.NextPageToken})
	if err != nil || len(last.Tags) != 1 || last.NextPageToken != "" || last.Tags[0].Name <= list.Tags[1].Name {
		t.Fatalf("ListTags, the second page: %v, %v", last, err)
	}
	_, err = f.c.ListTags(ctx, &frondv1.ListTagsRequest{PageSize: 10001})
	wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)
	if _, err := f.c.DeleteTag(ctx, &frondv1.DeleteTagRequest{Name: "x"}); err != nil {
		t.Fatal(err)
	}
	_, err = f.c.GetTag(ctx, &frondv1.GetTagRequest{Name: "x"})
	wantCode(t, err, codes.NotFound, frond.CodeTagNotFound)
	// ID methods need no token.
	if _, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order"}); err != nil {
		t.Fatal(err)
	}
}

func TestGRPC_Reveal(t *testing.T) {
	f := start(t, api.Options{})
	// Opaque numbers are a mapping of the tag's (frond.Tag.Mapping).
	if _, err := f.svc.CreateTag(bg, frond.Tag{Name: "opq", MaxID: 1, Step: 1000, Mapping: frond.MappingOpaque}); err != nil {
		t.Fatal(err)
	}
	op, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "opq", Form: "opaque"})
	if err != nil || len(op.Ids) != 1 || len(op.IdStrs) != 1 || op.Ids[0] == 1 {
		t.Fatalf("opaque: %v, %v", op, err)
	}
	r, err := f.c.Reveal(bg, &frondv1.RevealRequest{Kind: "segment", Form: "opaque", Value: op.IdStrs[0]})
	if err != nil || r.Id != 1 {
		t.Fatalf("Reveal: %v, %v", r, err)
	}
	if r, err := f.c.Reveal(bg, &frondv1.RevealRequest{Kind: "segment", Form: "opaque", Value: op.IdStrs[0], KeyVersion: 1}); err != nil || r.Id != 1 {
		t.Fatalf("Reveal with the current key's version: %v, %v", r, err)
	}
	_, err = f.c.Reveal(bg, &frondv1.RevealRequest{Kind: "segment", Form: "opaque", Value: op.IdStrs[0], KeyVersion: 9})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "version 9") {
		t.Fatalf("Reveal with an unknown key version: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// A call whose deadline has passed takes no ID; one whose deadline passes
// while it waits for the store gets DEADLINE_EXCEEDED, and the IDs loaded
// for it are never handed to anyone twice.
func TestGRPC_Deadline(t *testing.T) {
	f := start(t, api.Options{})
	f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order"})
	before := issued(f.svc, "order")
	// The server sees the deadline as passed (a deadline of 0 is sent as
	// 1 ns), so it answers before taking an ID.
	ctx, cancel := context.WithDeadline(bg, time.Now().Add(time.Nanosecond))
	_, err := f.c.NextSegment(ctx, &frondv1.NextSegmentRequest{Tag: "order"})
	cancel()
	wantCode(t, err, codes.DeadlineExceeded, "")
	if after := issued(f.svc, "order"); after != before {
		t.Fatalf("a call past its deadline took IDs: %d then %d", before, after)
	}

	if _, err := f.svc.CreateTag(bg, frond.Tag{Name: "slow", MaxID: 1, Step: 1000}); err != nil {
		t.Fatal(err)
	}
	release := f.store.Hold()
	ctx, cancel = context.WithTimeout(bg, 100*time.Millisecond)
	_, err = f.c.NextSegment(ctx, &frondv1.NextSegmentRequest{Tag: "slow", N: 5})
	cancel()
	wantCode(t, err, codes.DeadlineExceeded, "")
	release()
	seen := map[int64]bool{}
	for range 3 {
		got, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "slow", N: 5})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range got.Ids {
			if seen[id] {
				t.Fatalf("ID %d answered twice", id)
			}
			seen[id] = true
		}
	}
}

func TestGRPC_LeaseRanges(t *testing.T) {
	f := start(t, api.Options{})
	st, err := f.c.LeaseRanges(bg)
	if err != nil {
		t.Fatal(err)
	}
	next := int64(1)
	for _, n := range []int64{10, 500, 2000} {
		if err := st.Send(&frondv1.NextSegmentRangesRequest{Tag: "order", N: n}); err != nil {
			t.Fatal(err)
		}
		rs, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		var got int64
		for _, r := range rs.Ranges {
			if r.Start != next {
				t.Fatalf("range %v: want start %d", r, next)
			}
			next = r.End
			got += r.Count
		}
		if got != n || rs.Count != n {
			t.Fatalf("asked %d, got %d (%v)", n, got, rs)
		}
	}
	st.CloseSend()
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("after CloseSend: %v, want EOF", err)
	}
	// An error ends the stream with its status.
	st, err = f.c.LeaseRanges(bg)
	if err != nil {
		t.Fatal(err)
	}
	st.Send(&frondv1.NextSegmentRangesRequest{Tag: "nope", N: 1})
	_, err = st.Recv()
	wantCode(t, err, codes.NotFound, frond.CodeTagNotFound)
}

func TestGRPC_Health(t *testing.T) {
	f := start(t, api.Options{})
	h := healthpb.NewHealthClient(f.conn)
	for _, name := range []string{"", "frond.v1.IDService", "segment", "snowflake"} {
		r, err := h.Check(bg, &healthpb.HealthCheckRequest{Service: name})
		if err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("Check(%q): %v, %v", name, r, err)
		}
	}
	_, err := h.Check(bg, &healthpb.HealthCheckRequest{Service: "nope"})
	wantCode(t, err, codes.NotFound, "")
	// The store down and nothing buffered: segment is NOT_SERVING, the
	// node still serves snowflake IDs.
	f.store.SetDown(true)
	r, err := h.Check(bg, &healthpb.HealthCheckRequest{Service: "segment"})
	if err != nil || r.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("segment with the store down: %v, %v", r, err)
	}
	r, err = h.Check(bg, &healthpb.HealthCheckRequest{})
	if err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("overall with the store down: %v, %v", r, err)
	}
	list, err := h.List(bg, &healthpb.HealthListRequest{})
	if err != nil || len(list.Statuses) != 4 || list.Statuses["segment"].Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("List: %v, %v", list, err)
	}
	f.store.SetDown(false)

	w, err := h.Watch(bg, &healthpb.HealthCheckRequest{Service: "snowflake"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := w.Recv(); err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Watch: %v, %v", r, err)
	}
	// Shutdown: a watcher hears NOT_SERVING before the server goes.
	var wg sync.WaitGroup
	wg.Go(func() { f.srv.Shutdown(bg) })
	if r, err := w.Recv(); err != nil || r.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("Watch at shutdown: %v, %v", r, err)
	}
	wg.Wait()
}

func TestGRPC_Reflection(t *testing.T) {
	f := start(t, api.Options{})
	st, err := reflectionpb.NewServerReflectionClient(f.conn).ServerReflectionInfo(bg)
	if err != nil {
		t.Fatal(err)
	}
	st.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
	r, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range r.GetListServicesResponse().GetService() {
		names = append(names, s.Name)
	}
	got := strings.Join(names, " ")
	for _, want := range []string{"frond.v1.IDService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"} {
		if !strings.Contains(got, want) {
			t.Fatalf("reflection lists %s, lacks %s", got, want)
		}
	}
}

// Shutdown lets a call in progress finish.
func TestGRPC_GracefulStop(t *testing.T) {
	f := start(t, api.Options{})
	if _, err := f.svc.CreateTag(bg, frond.Tag{Name: "slow", MaxID: 1, Step: 10}); err != nil {
		t.Fatal(err)
	}
	release := f.store.Hold()
	calls := f.store.Allocations()
	errc := make(chan error, 1)
	go func() {
		_, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "slow"})
		errc <- err
	}()
	for f.store.Allocations() == calls {
		time.Sleep(time.Millisecond)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- f.srv.Shutdown(bg) }()
	select {
	case err := <-stopped:
		t.Fatalf("Shutdown returned (%v) with a call in progress", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	if err := <-errc; err != nil {
		t.Fatalf("the call in progress failed: %v", err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// With tokens configured, segment methods need x-frond-token metadata that
// allows the tag: PERMISSION_DENIED otherwise.
func TestGRPC_TagTokens(t *testing.T) {
	f := start(t, api.Options{}, func(c *service.Config) { c.Tokens = map[string][]string{"t1": {"order"}} })
	_, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order"})
	wantCode(t, err, codes.PermissionDenied, frond.CodeForbidden)
	ctx := metadata.AppendToOutgoingContext(bg, TokenMetadata, "t1")
	if out, err := f.c.NextSegment(ctx, &frondv1.NextSegmentRequest{Tag: "order"}); err != nil || out.Ids[0] != 1 {
		t.Fatalf("with the token: %v, %v", out, err)
	}
	_, err = f.c.NextSegmentRanges(metadata.AppendToOutgoingContext(bg, TokenMetadata, "nope"), &frondv1.NextSegmentRangesRequest{Tag: "order", N: 5})
	wantCode(t, err, codes.PermissionDenied, frond.CodeForbidden)
}

// An open LeaseRanges stream, waiting for its client's next request, does
// not hold up a graceful stop: it ends with UNAVAILABLE.
func TestGRPC_ShutdownEndsIdleStreams(t *testing.T) {
	f := start(t, api.Options{})
	st, err := f.c.LeaseRanges(bg)
	if err != nil {
		t.Fatal(err)
	}
	st.Send(&frondv1.NextSegmentRangesRequest{Tag: "order", N: 10})
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := f.srv.Shutdown(ctx); err != nil || time.Since(start) > 2*time.Second {
		t.Fatalf("Shutdown with an idle stream: %v after %v", err, time.Since(start))
	}
	_, err = st.Recv()
	wantCode(t, err, codes.Unavailable, "")
}

// The access log logs one line per call with its request ID, sent back in
// the response header.
func TestGRPC_AccessLog(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	f := start(t, api.Options{AccessLog: true, Logger: slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, nil))})
	var hdr metadata.MD
	ctx := metadata.AppendToOutgoingContext(bg, "x-request-id", "req-7")
	if _, err := f.c.NextSegment(ctx, &frondv1.NextSegmentRequest{Tag: "order"}, grpc.Header(&hdr)); err != nil {
		t.Fatal(err)
	}
	if got := hdr.Get("x-request-id"); len(got) != 1 || got[0] != "req-7" {
		t.Fatalf("x-request-id answered %v", got)
	}
	f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "nope"}, grpc.Header(&hdr))
	if got := hdr.Get("x-request-id"); len(got) != 1 || len(got[0]) != 16 {
		t.Fatalf("a new request ID: %v", got)
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if !strings.Contains(out, `"request_id":"req-7"`) || !strings.Contains(out, `"code":"NotFound"`) || !strings.Contains(out, `"method":"/frond.v1.IDService/NextSegment"`) {
		t.Fatalf("access log: %s", out)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// docs/grpc.md's table of error codes gives the gRPC code codeOf answers
// for every frond code a gRPC call can get.
func TestErrorCodes_Documented(t *testing.T) {
	b, err := os.ReadFile("../../docs/grpc.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	row := regexp.MustCompile("(?m)^\\| (`[a-z_]+`.*?) \\| `([A-Z_]+)` \\|")
	name := regexp.MustCompile("`([a-z_]+)`")
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		// The first cell names codes in backquotes before any parenthesis.
		names, _, _ := strings.Cut(m[1], "(")
		for _, n := range name.FindAllStringSubmatch(names, -1) {
			documented[n[1]] = true
			if got := strings.ToUpper(snakeCase(codeOf(n[1]).String())); got != m[2] {
				t.Errorf("docs/grpc.md: %s is %s, codeOf gives %s", n[1], m[2], got)
			}
		}
	}
	for _, c := range frond.ErrorCodes() {
		switch c.Name {
		case frond.CodeNotFound, frond.CodeMethodNotAllowed: // HTTP's: gRPC answers UNIMPLEMENTED itself
			continue
		}
		if !documented[c.Name] {
			t.Errorf("docs/grpc.md has no row for %s", c.Name)
		}
	}
}

// snakeCase writes NotFound as Not_Found.
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// The schemes of issue 33 over gRPC: name-based and time UUIDs, TypeIDs,
// Mist, friendly snowflake IDs and prefixes, and their reveal.
func TestGRPC_Schemes(t *testing.T) {
	f := start(t, api.Options{})
	u, err := f.c.NextUUID(bg, &frondv1.NextUUIDRequest{Version: 5, Namespace: "dns", Name: "example.com"})
	if err != nil || len(u.Uuids) != 1 || u.Uuids[0] != "cfbff0d1-9375-5685-968c-48ce8b15ae17" {
		t.Fatalf("v5: %v, %v", u, err)
	}
	u, err = f.c.NextUUID(bg, &frondv1.NextUUIDRequest{Version: 6, N: 2})
	if err != nil || len(u.Uuids) != 2 || u.Uuids[0][14] != '6' || u.Uuids[0] >= u.Uuids[1] {
		t.Fatalf("v6: %v, %v", u, err)
	}
	u, err = f.c.NextUUID(bg, &frondv1.NextUUIDRequest{Version: 7, Form: "typeid", Prefix: "user"})
	if err != nil || u.Form != "typeid" || !strings.HasPrefix(u.Uuids[0], "user_") {
		t.Fatalf("typeid: %v, %v", u, err)
	}
	r, err := f.c.Reveal(bg, &frondv1.RevealRequest{Kind: "uuid", Form: "typeid", Value: u.Uuids[0], Prefix: "user"})
	if err != nil || len(r.Uuid) != 36 || r.Prefix != "user" {
		t.Fatalf("reveal typeid: %v, %v", r, err)
	}
	_, err = f.c.NextUUID(bg, &frondv1.NextUUIDRequest{Version: 5, Namespace: "dns"})
	wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)
	if _, err := f.svc.CreateTag(bg, frond.Tag{Name: "mst", MaxID: 1, Step: 1000, Mapping: frond.MappingMist}); err != nil {
		t.Fatal(err)
	}
	m, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "mst", Form: "mist", N: 2})
	if err != nil || len(m.Ids) != 2 || m.Ids[0]>>16 != 1 || m.Ids[1]>>16 != 2 {
		t.Fatalf("mist: %v, %v", m, err)
	}
	r, err = f.c.Reveal(bg, &frondv1.RevealRequest{Kind: "segment", Form: "mist", Value: m.IdStrs[1]})
	if err != nil || r.Id != 2 || len(r.Salts) != 2 {
		t.Fatalf("reveal mist: %v, %v", r, err)
	}
	p, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order", Form: "base62", Prefix: "ord"})
	if err != nil || p.IdStrs[0] != "ord_00000000001" {
		t.Fatalf("prefix: %v, %v", p, err)
	}
	_, err = f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order", Prefix: "ord"})
	wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)
	s, err := f.c.NextSnowflake(bg, &frondv1.NextSnowflakeRequest{Form: "friendly"})
	if err != nil || len(s.Ids) != 0 || strings.Count(s.IdStrs[0], "-") != 2 {
		t.Fatalf("friendly: %v, %v", s, err)
	}
	r, err = f.c.Reveal(bg, &frondv1.RevealRequest{Kind: "snowflake", Form: "friendly", Value: s.IdStrs[0]})
	if err != nil || r.Id <= 0 {
		t.Fatalf("reveal friendly: %v, %v", r, err)
	}
}
