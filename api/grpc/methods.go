package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/keyseq"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
	"github.com/frond-id/frond/service"
)

// ids encodes the IDs of an answer: numbers for the numeric forms, text
// for every form but number.
func ids(a service.Answer) *frondv1.IDs {
	out := &frondv1.IDs{Tag: a.Request.Name, Form: a.Form, Ids: a.Nums}
	if a.Form != service.FormNumber {
		out.IdStrs = a.Strs
	}
	return out
}

// held registers m, the answer of a, with a's place in the node's answer
// budget (Server.held), and returns it.
func held[M proto.Message](s *Server, ctx context.Context, m M, a service.Answer) M {
	s.held(ctx, m, a)
	return m
}

func (s *Server) NextSegment(ctx context.Context, in *frondv1.NextSegmentRequest) (*frondv1.IDs, error) {
	a, err := s.take(ctx, service.Request{Kind: service.KindSegment, Name: in.GetTag(), Count: in.GetN(), Form: in.GetForm(), Prefix: in.GetPrefix(), Numbers: in.GetNumbers(), Token: tagToken(ctx),
		Shard: in.GetShard(), HasShard: in.Shard != nil, ShardKey: in.GetShardKey()})
	if err != nil {
		return nil, err
	}
	return held(s, ctx, ids(a), a), nil
}

func (s *Server) NextSnowflake(ctx context.Context, in *frondv1.NextSnowflakeRequest) (*frondv1.IDs, error) {
	a, err := s.take(ctx, service.Request{Kind: service.KindSnowflake, Count: in.GetN(), Form: in.GetForm(), Prefix: in.GetPrefix(),
		Shard: in.GetShard(), HasShard: in.Shard != nil, ShardKey: in.GetShardKey()})
	if err != nil {
		return nil, err
	}
	return held(s, ctx, ids(a), a), nil
}

func (s *Server) NextSegmentRanges(ctx context.Context, in *frondv1.NextSegmentRangesRequest) (*frondv1.Ranges, error) {
	a, err := s.take(ctx, service.Request{Kind: service.KindSegment, Name: in.GetTag(), Count: in.GetN(), Ranges: true, Lease: in.GetLease(), Counters: in.GetCounters(), Token: tagToken(ctx)})
	if err != nil {
		return nil, err
	}
	return held(s, ctx, ranges(a), a), nil
}

func ranges(a service.Answer) *frondv1.Ranges {
	out := &frondv1.Ranges{Tag: a.Request.Name, Count: max(a.Request.Count, 1), Ranges: make([]*frondv1.Range, len(a.Ranges)), ShardBits: int32(a.Request.ShardBits)}
	for i, r := range a.Ranges {
		out.Ranges[i] = &frondv1.Range{Start: r.Start, End: r.End, Stride: r.Stride, Count: r.Len()}
	}
	return out
}

// LeaseRanges answers each request of the stream with its ranges, in order,
// until the client closes its side. A request is only taken once it has
// arrived: the server never takes ranges ahead of the client. At shutdown
// a stream waiting for its client's next request ends with UNAVAILABLE (a
// request being answered is finished first).
//
// A stream that carries an idempotency key is refused before any message
// is read: a key names one request, and every message of a stream would
// read the stream's one key, so a second identical message would get the
// first one's IDs again.
func (s *Server) LeaseRanges(st grpc.BidiStreamingServer[frondv1.NextSegmentRangesRequest, frondv1.Ranges]) error {
	ctx := st.Context()
	if md, _ := metadata.FromIncomingContext(ctx); len(md.Get(IdempotencyMetadata)) > 0 {
		return fmt.Errorf("%w: LeaseRanges takes no %s metadata: a key names one request and a stream carries many; "+
			"send the stream without it, or call NextSegmentRanges with a key per request", frond.ErrInvalidArgument, IdempotencyMetadata)
	}
	type recv struct {
		in  *frondv1.NextSegmentRangesRequest
		err error
	}
	next := make(chan recv, 1)
	// A stream waiting for its client's next request holds its connection
	// open (MaxConnectionIdle does not apply while a stream is): it ends
	// after the idle timeout without one (issue 43).
	idle := time.NewTimer(s.o.Conn.IdleTimeout)
	defer idle.Stop()
	for {
		go func() {
			in, err := st.Recv()
			next <- recv{in, err}
		}()
		idle.Reset(s.o.Conn.IdleTimeout)
		var r recv
		select {
		case <-idle.C:
			return status.Errorf(codes.Unavailable, "no request for %v (limits.idle_timeout): open a new stream", s.o.Conn.IdleTimeout)
		case r = <-next:
		case <-s.stopping:
			return status.Error(codes.Unavailable, "the server is shutting down: open a stream to another server")
		case <-ctx.Done():
			return ctx.Err()
		}
		if errors.Is(r.err, io.EOF) {
			return nil
		}
		if r.err != nil {
			return r.err
		}
		// Every message is a request: the rate limit applies to each, not
		// only to the stream's opening.
		if err := s.guard(ctx); err != nil {
			return err
		}
		out, err := s.NextSegmentRanges(ctx, r.in)
		if err != nil {
			return err
		}
		if err := st.Send(out); err != nil {
			return err
		}
	}
}

func (s *Server) NextUUID(ctx context.Context, in *frondv1.NextUUIDRequest) (*frondv1.UUIDs, error) {
	a, err := s.take(ctx, service.Request{Kind: service.KindUUID, Count: in.GetN(), Version: int(in.GetVersion()),
		Namespace: in.GetNamespace(), Name: in.GetName(), Form: in.GetForm(), Prefix: in.GetPrefix()})
	if err != nil {
		return nil, err
	}
	return held(s, ctx, &frondv1.UUIDs{Version: int32(a.Request.Version), Uuids: a.Strs, Form: a.Request.Form}, a), nil
}

func (s *Server) NextSerial(ctx context.Context, in *frondv1.NextSerialRequest) (*frondv1.Serials, error) {
	a, err := s.take(ctx, service.Request{Kind: service.KindSerial, Name: in.GetName(), Count: in.GetN()})
	if err != nil {
		return nil, err
	}
	return held(s, ctx, &frondv1.Serials{Name: a.Request.Name, Serials: a.Strs}, a), nil
}

func (s *Server) NextSeq(ctx context.Context, in *frondv1.NextSeqRequest) (*frondv1.SeqValues, error) {
	a, err := s.take(ctx, service.Request{Kind: service.KindSeq, Name: in.GetSpace(), Key: in.GetKey(), Count: in.GetN(), Token: tagToken(ctx)})
	if err != nil {
		return nil, err
	}
	if sp := s.svc.Spaces(); sp != nil {
		// Which section the key is in, and whether this node serves it:
		// a client sends the section's next keys straight here
		// (keyseq.RouteHeader).
		if sec, n, mine := sp.Serves(a.Request.Name, a.Request.Key); n > 0 {
			grpc.SetHeader(ctx, metadata.Pairs(keyseq.RouteHeader, keyseq.Route{Section: sec, Sections: n, Mine: mine}.String()))
		}
	}
	return held(s, ctx, &frondv1.SeqValues{Space: a.Request.Name, Key: a.Request.Key, First: a.Nums[0], Last: a.Nums[len(a.Nums)-1]}, a), nil
}

func (s *Server) Decode(_ context.Context, in *frondv1.DecodeRequest) (*frondv1.Decoded, error) {
	d, err := s.svc.Decode(in.GetId(), in.GetLayout())
	if err != nil {
		return nil, err
	}
	return decodedPB(d), nil
}

// decodedPB is a decoded snowflake ID as Decode and Compose answer it.
func decodedPB(d service.Decoded) *frondv1.Decoded {
	return &frondv1.Decoded{Id: d.ID, Layout: d.Layout, Time: timestamppb.New(d.Time), Tick: d.Tick, Node: d.Node, Sequence: d.Seq,
		Datacenter: d.Datacenter, Worker: d.Worker, Shard: d.Shard}
}

func (s *Server) Compose(_ context.Context, in *frondv1.ComposeRequest) (*frondv1.Decoded, error) {
	at, err := timeOf("time", in.GetTime())
	if err != nil {
		return nil, err
	}
	d, err := s.svc.Compose(service.ComposeRequest{Layout: in.GetLayout(), Time: at, Node: in.GetNode(), Seq: in.GetSequence(),
		Datacenter: in.Datacenter, Worker: in.Worker, Shard: in.GetShard(), ShardKey: in.GetShardKey()})
	if err != nil {
		return nil, err
	}
	return decodedPB(d), nil
}

func (s *Server) Bounds(_ context.Context, in *frondv1.BoundsRequest) (*frondv1.IDBounds, error) {
	from, err := timeOf("from", in.GetFrom())
	if err != nil {
		return nil, err
	}
	to, err := timeOf("to", in.GetTo())
	if err != nil {
		return nil, err
	}
	kind := in.GetKind()
	if kind == "" {
		kind = service.KindSnowflake
	}
	b, err := s.svc.IDBounds(service.BoundsRequest{Kind: kind, Layout: in.GetLayout(), Version: int(in.GetVersion()),
		Form: in.GetForm(), Prefix: in.GetPrefix(), From: from, To: to})
	if err != nil {
		return nil, err
	}
	return &frondv1.IDBounds{Kind: b.Kind, Layout: b.Layout, Version: int32(b.Version), Form: b.Form,
		From: timestamppb.New(b.From), To: timestamppb.New(b.To), FirstId: b.FirstID, LastId: b.LastID, First: b.First, Last: b.Last}, nil
}

// timeOf is a request's timestamp, required and valid.
func timeOf(name string, ts *timestamppb.Timestamp) (time.Time, error) {
	if ts == nil {
		return time.Time{}, fmt.Errorf("%w: %s: a time is required", frond.ErrInvalidArgument, name)
	}
	if err := ts.CheckValid(); err != nil {
		return time.Time{}, fmt.Errorf("%w: %s: %v", frond.ErrInvalidArgument, name, err)
	}
	return ts.AsTime(), nil
}

func (s *Server) Info(context.Context, *frondv1.InfoRequest) (*frondv1.NodeInfo, error) {
	w := s.svc.WorkerInfo()
	l := s.svc.Layout()
	out := &frondv1.NodeInfo{
		Held: w.Held, Issuing: w.Issuing, FromLocalRecord: w.FromCache, WorkerError: w.Error,
		Layout: &frondv1.Layout{Name: l.Name, Unit: l.Unit.String(), TimeBits: int32(l.TimeBits), NodeBits: int32(l.NodeBits),
			SequenceBits: int32(l.SeqBits), Epoch: timestamppb.New(l.Epoch), Expires: timestamppb.New(l.Expires()), MaxId: l.MaxID(),
			DatacenterBits: int32(l.DatacenterBits), ShardBits: int32(l.ShardBits)},
		MaxBatch: service.MaxBatch, MaxRangesBatch: service.MaxRangesBatch, StartedAt: timestamppb.New(s.started),
		ReservedAheadNs: int64(w.ReservedAhead), PeerSkewNs: int64(w.PeerSkew), Peers: int32(w.PeerCount),
	}
	if w.ID >= 0 {
		out.WorkerId = &w.ID
	}
	out.Datacenter, out.Worker = w.Datacenter, w.Worker
	return out, nil
}

func (s *Server) Reveal(_ context.Context, in *frondv1.RevealRequest) (*frondv1.Revealed, error) {
	out, err := s.svc.Reveal(service.RevealRequest{Kind: in.GetKind(), Form: in.GetForm(), Value: in.GetValue(),
		KeyVersion: int(in.GetKeyVersion()), Prefix: in.GetPrefix(), Tag: in.GetTag()})
	if err != nil {
		return nil, err
	}
	r := &frondv1.Revealed{Kind: out.Kind, Id: out.ID, Uuid: out.UUID, Prefix: out.Prefix}
	for _, x := range out.Salts {
		r.Salts = append(r.Salts, int32(x))
	}
	return r, nil
}

func tag(t frond.Tag) *frondv1.Tag {
	return &frondv1.Tag{Name: t.Name, MaxId: t.MaxID, Step: t.Step, Description: t.Description, UpdatedAt: timestamppb.New(t.UpdatedAt), Mode: t.ModeName(), Mapping: t.MappingName()}
}

func (s *Server) ListTags(ctx context.Context, in *frondv1.ListTagsRequest) (*frondv1.TagList, error) {
	tags, next, err := s.svc.TagPage(ctx, in.GetPageToken(), int(in.GetPageSize()))
	if err != nil {
		return nil, err
	}
	out := &frondv1.TagList{Tags: make([]*frondv1.Tag, len(tags)), NextPageToken: next}
	for i, t := range tags {
		out.Tags[i] = tag(t)
	}
	return out, nil
}

func (s *Server) GetTag(ctx context.Context, in *frondv1.GetTagRequest) (*frondv1.Tag, error) {
	t, err := s.svc.Tag(ctx, in.GetName())
	if err != nil {
		return nil, err
	}
	return tag(t), nil
}

func (s *Server) CreateTag(ctx context.Context, in *frondv1.CreateTagRequest) (*frondv1.Tag, error) {
	if in.Step == nil {
		return nil, fmt.Errorf("%w: step is required", frond.ErrInvalidArgument)
	}
	t := frond.Tag{Name: in.GetName(), MaxID: 1, Step: in.GetStep(), Description: in.GetDescription(), Mode: in.GetMode(), Mapping: in.GetMapping()}
	if in.MaxId != nil {
		t.MaxID = in.GetMaxId()
	}
	out, err := s.svc.CreateTag(ctx, t)
	if err != nil {
		return nil, err
	}
	return tag(out), nil
}

func (s *Server) UpdateTag(ctx context.Context, in *frondv1.UpdateTagRequest) (*frondv1.Tag, error) {
	t, err := s.svc.UpdateTag(ctx, in.GetName(), frond.TagUpdate{Step: in.Step, MaxID: in.MaxId, Description: in.Description, Mapping: in.Mapping})
	if err != nil {
		return nil, err
	}
	return tag(t), nil
}

func (s *Server) DeleteTag(ctx context.Context, in *frondv1.DeleteTagRequest) (*frondv1.DeleteTagResponse, error) {
	if err := s.svc.DeleteTag(ctx, in.GetName()); err != nil {
		return nil, err
	}
	return &frondv1.DeleteTagResponse{}, nil
}

func (s *Server) CreateSpace(ctx context.Context, in *frondv1.CreateSpaceRequest) (*frondv1.Space, error) {
	sp, err := s.svc.CreateSpace(ctx, keyseq.Space{Name: in.GetName(), Step: in.GetStep(), Sections: int(in.GetSections()), Slots: int(in.GetSlots())})
	if err != nil {
		return nil, err
	}
	return &frondv1.Space{Name: sp.Name, Step: sp.Step, Sections: int32(sp.Sections), Slots: int32(sp.Slots)}, nil
}

func (s *Server) ListSpaces(ctx context.Context, _ *frondv1.ListSpacesRequest) (*frondv1.SpaceList, error) {
	list, err := s.svc.ListSpaces(ctx)
	if err != nil {
		return nil, err
	}
	out := &frondv1.SpaceList{}
	for _, st := range list {
		held := make([]int32, len(st.Held))
		for i, h := range st.Held {
			held[i] = int32(h)
		}
		out.Spaces = append(out.Spaces, &frondv1.Space{Name: st.Name, Step: st.Step, Sections: int32(st.Sections), Slots: int32(st.Slots), Held: held, Members: int32(st.Members)})
	}
	return out, nil
}
