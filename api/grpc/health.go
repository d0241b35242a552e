package grpcapi

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	frondv1 "github.com/frond-id/frond/proto/frond/v1"
	"github.com/frond-id/frond/service"
)

// The health services: "" and frond.v1.IDService are SERVING when some kind
// of ID can be served (HTTP's /readyz does not answer 503); "segment" and
// "snowflake" are each kind's readiness (/readyz/segment, /readyz/snowflake).
const (
	HealthSegment   = service.KindSegment
	HealthSnowflake = service.KindSnowflake
)

// healthPoll is how often Watch looks at readiness again.
const healthPoll = time.Second

// health answers grpc.health.v1 from the service's readiness at the time
// of the call, as HTTP's readiness pages do.
type health struct {
	healthpb.UnimplementedHealthServer
	svc     *service.Service
	stopped atomic.Bool
	done    chan struct{}

	// The readiness the Watch streams share: every client connection
	// watches, and each would otherwise ping the store every healthPoll.
	mu     sync.Mutex
	seenAt time.Time
	seg    bool
	snow   bool
}

// healthPing bounds the store ping of a readiness check.
const healthPing = 2 * time.Second

// readiness is whether segment and snowflake IDs can be served now; with
// shared, a result younger than healthPoll is reused.
func (h *health) readiness(ctx context.Context, shared bool) (seg, snow bool) {
	if shared {
		h.mu.Lock()
		if time.Since(h.seenAt) < healthPoll {
			seg, snow = h.seg, h.snow
			h.mu.Unlock()
			return seg, snow
		}
		h.mu.Unlock()
	}
	snow = h.svc.SnowflakeReady().Ready
	pctx, cancel := context.WithTimeout(ctx, healthPing)
	seg = h.svc.SegmentReady(pctx).Ready
	cancel()
	h.mu.Lock()
	h.seenAt, h.seg, h.snow = time.Now(), seg, snow
	h.mu.Unlock()
	return seg, snow
}

func newHealth(svc *service.Service) *health {
	return &health{svc: svc, done: make(chan struct{})}
}

// shutdown makes every service NOT_SERVING: a balancer watching stops
// sending calls before the server stops.
func (h *health) shutdown() {
	if h.stopped.CompareAndSwap(false, true) {
		close(h.done)
	}
}

var healthServices = []string{"", frondv1.IDService_ServiceDesc.ServiceName, HealthSegment, HealthSnowflake}

func (h *health) status(ctx context.Context, name string, shared bool) (healthpb.HealthCheckResponse_ServingStatus, bool) {
	if h.stopped.Load() {
		return healthpb.HealthCheckResponse_NOT_SERVING, true
	}
	var ready bool
	switch name {
	case "", frondv1.IDService_ServiceDesc.ServiceName:
		seg, snow := h.readiness(ctx, shared)
		ready = seg || snow
	case HealthSegment:
		ready, _ = h.readiness(ctx, shared)
	case HealthSnowflake:
		ready = h.svc.SnowflakeReady().Ready // no network call
	default:
		return healthpb.HealthCheckResponse_SERVICE_UNKNOWN, false
	}
	if ready {
		return healthpb.HealthCheckResponse_SERVING, true
	}
	return healthpb.HealthCheckResponse_NOT_SERVING, true
}

func (h *health) Check(ctx context.Context, in *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	st, ok := h.status(ctx, in.GetService(), false)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "unknown service %q: %q, %q, %q or %q", in.GetService(), healthServices[0], healthServices[1], healthServices[2], healthServices[3])
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

func (h *health) List(ctx context.Context, _ *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	out := &healthpb.HealthListResponse{Statuses: map[string]*healthpb.HealthCheckResponse{}}
	for _, name := range healthServices {
		st, _ := h.status(ctx, name, false)
		out.Statuses[name] = &healthpb.HealthCheckResponse{Status: st}
	}
	return out, nil
}

// Watch sends the status at once and then on every change, looking again
// every healthPoll (the watchers share one readiness check a healthPoll);
// an unknown service is SERVICE_UNKNOWN, as the protocol has it.
func (h *health) Watch(in *healthpb.HealthCheckRequest, ws healthpb.Health_WatchServer) error {
	ctx := ws.Context()
	last := healthpb.HealthCheckResponse_ServingStatus(-1)
	t := time.NewTicker(healthPoll)
	defer t.Stop()
	for {
		st, _ := h.status(ctx, in.GetService(), true)
		if st != last {
			if err := ws.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
			last = st
		}
		// Not ended when idle, unlike LeaseRanges: a client's health
		// checking keeps one Watch per connection open for as long as it
		// uses it, and a Watch that ended would put that connection in
		// TRANSIENT_FAILURE until the next one answers.
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-h.done:
			if last != healthpb.HealthCheckResponse_NOT_SERVING {
				ws.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING})
			}
			return status.Error(codes.Unavailable, "the server is shutting down")
		case <-t.C:
		}
	}
}
