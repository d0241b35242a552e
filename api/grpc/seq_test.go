package grpcapi

import (
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/keyseq"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
	"github.com/frond-id/frond/service"
)

// Keyed sequences over gRPC: CreateSpace and ListSpaces (admin), NextSeq.
func TestGRPC_Seq(t *testing.T) {
	f := start(t, api.Options{AdminToken: "adm"}, func(c *service.Config) {
		c.Spaces = keyseq.NewSpaces(&keyseq.MemLeases{}, keyseq.Owner{Token: "me", Addr: "127.0.0.1:1"},
			keyseq.NodeOptions{TTL: time.Minute, Logger: slog.New(slog.DiscardHandler)}, nil)
	})
	_, err := f.c.CreateSpace(bg, &frondv1.CreateSpaceRequest{Name: "msgs"})
	wantCode(t, err, codes.Unauthenticated, frond.CodeUnauthorized)
	ctx := metadata.AppendToOutgoingContext(bg, "authorization", "Bearer adm")
	sp, err := f.c.CreateSpace(ctx, &frondv1.CreateSpaceRequest{Name: "msgs", Step: 100, Sections: 4})
	if err != nil || sp.GetStep() != 100 || sp.GetSections() != 4 || sp.GetSlots() != keyseq.DefaultSlots {
		t.Fatalf("CreateSpace: %v, %v", sp, err)
	}
	_, err = f.c.CreateSpace(ctx, &frondv1.CreateSpaceRequest{Name: "msgs"})
	wantCode(t, err, codes.AlreadyExists, frond.CodeTagExists)
	for want := int64(1); want <= 3; want++ {
		v, err := f.c.NextSeq(bg, &frondv1.NextSeqRequest{Space: "msgs", Key: "conv-1"})
		if err != nil || v.GetFirst() != want || v.GetLast() != want || v.GetKey() != "conv-1" {
			t.Fatalf("NextSeq: %v, %v; want %d", v, err, want)
		}
	}
	v, err := f.c.NextSeq(bg, &frondv1.NextSeqRequest{Space: "msgs", Key: "conv-1", N: 5})
	if err != nil || v.GetFirst() != 4 || v.GetLast() != 8 {
		t.Fatalf("NextSeq n=5: %v, %v", v, err)
	}
	_, err = f.c.NextSeq(bg, &frondv1.NextSeqRequest{Space: "msgs", Key: ""})
	wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)
	_, err = f.c.NextSeq(bg, &frondv1.NextSeqRequest{Space: "nope", Key: "k"})
	wantCode(t, err, codes.NotFound, frond.CodeTagNotFound)
	list, err := f.c.ListSpaces(ctx, &frondv1.ListSpacesRequest{})
	if err != nil || len(list.GetSpaces()) != 1 || len(list.GetSpaces()[0].GetHeld()) != 4 || list.GetSpaces()[0].GetMembers() != 1 {
		t.Fatalf("ListSpaces: %v, %v", list, err)
	}
}
