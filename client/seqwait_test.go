package client_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/frond-id/frond/client"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

// betweenOwners answers every keyed sequence request as a live frond server
// does while the key's section is between owners: UNAVAILABLE with frond's
// code store_unavailable and a retry time of a second.
type betweenOwners struct {
	frondv1.UnimplementedIDServiceServer
	calls atomic.Int64
}

func (b *betweenOwners) NextSeq(context.Context, *frondv1.NextSeqRequest) (*frondv1.SeqValues, error) {
	b.calls.Add(1)
	st, err := status.New(codes.Unavailable, "keyed sequence space \"msgs\" section 3 is between owners").WithDetails(
		&errdetails.ErrorInfo{Reason: "STORE_UNAVAILABLE", Domain: "frond", Metadata: map[string]string{"code": "store_unavailable"}},
		&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Second)})
	if err != nil {
		panic(err)
	}
	return nil, st.Err()
}

// Issue 72: Seq asks a live server that says its section is between owners
// again until SeqWait has passed (not only Attempts), resting it for its
// retry time only; the error it then returns is that server's answer
// (store_unavailable, from the server, its retry time), not the dead
// server's refused connection it tried last.
func TestClient_SeqWaitsAndNamesTheAnswer(t *testing.T) {
	live := &betweenOwners{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	frondv1.RegisterIDServiceServer(gs, live)
	go gs.Serve(ln)
	defer gs.Stop()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close() // nothing listens there: refused
	c := newClient(t, client.Options{Servers: []string{deadAddr, ln.Addr().String()}, Timeout: time.Second,
		BackoffMin: 50 * time.Millisecond, BackoffMax: 5 * time.Second, SeqWait: 2500 * time.Millisecond})
	start := time.Now()
	_, _, err = c.Seq(context.Background(), "msgs", "k", 1)
	took := time.Since(start)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "store_unavailable" || !ce.FromServer() || ce.RetryAfter != time.Second ||
		!strings.Contains(ce.Message, "between owners") {
		t.Fatalf("Seq's error: %#v (%v)", ce, err)
	}
	if took < 2*time.Second || took > 5*time.Second {
		t.Fatalf("Seq gave up after %v (SeqWait 2.5 s)", took)
	}
	// Asked again within the wait (about once a second, its retry time),
	// past the attempts the dead server's refusals spent.
	if n := live.calls.Load(); n < 2 {
		t.Fatalf("the live server was asked %d times in %v", n, took)
	}
}
