// Command trivial is the baseline of the bench scripts: a server that does
// no work but an atomic add, for each protocol frond speaks, so that
// whatever frond costs above it in the same run is frond's. Its IDs come
// from a counter, so frond bench's duplicate check passes against it too.
//
//	-proto http: a net/http server whose one handler returns the next
//	  19-digit number as text/plain (Leaf's API), or as {"id":N} under /v1/
//	  (frond's JSON API), with frond's timeouts.
//	-proto resp: a redcon server answering every command with the next
//	  integer (HELLO with Redis 5's unknown command, so clients speak RESP2).
//	-proto grpc: a grpc-go server of frond.v1.IDService whose NextSegment
//	  answers the next IDs (as many as asked), with no interceptor.
package main

import (
	"context"
	"flag"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"
	"google.golang.org/grpc"

	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

// next hands out IDs from 2124379261987979264 on.
var next atomic.Int64

func init() { next.Store(2124379261987979264) }

func main() {
	proto := flag.String("proto", "http", "http, resp or grpc")
	addr := flag.String("addr", "127.0.0.1:18082", "listen address")
	flag.Parse()
	switch *proto {
	case "http":
		mux := http.NewServeMux()
		mux.HandleFunc("GET /{path...}", func(w http.ResponseWriter, r *http.Request) {
			var b [32]byte
			if strings.HasPrefix(r.URL.Path, "/v1/") { // frond's JSON API: {"id":N}
				w.Header().Set("Content-Type", "application/json")
				out := append(strconv.AppendInt(append(b[:0], `{"id":`...), next.Add(1), 10), '}')
				w.Write(out)
				return
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Write(strconv.AppendInt(b[:0], next.Add(1), 10))
		})
		srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 16 << 10}
		log.Fatal(srv.ListenAndServe())
	case "resp":
		log.Fatal(redcon.ListenAndServe(*addr, func(c redcon.Conn, cmd redcon.Command) {
			if strings.EqualFold(string(cmd.Args[0]), "hello") { // as a Redis before 6: clients fall back to RESP2
				c.WriteError("ERR unknown command 'HELLO'")
				return
			}
			c.WriteInt64(next.Add(1))
		}, nil, nil))
	case "grpc":
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			log.Fatal(err)
		}
		s := grpc.NewServer()
		frondv1.RegisterIDServiceServer(s, constant{})
		log.Fatal(s.Serve(ln))
	default:
		log.Fatalf("-proto %q: http, resp or grpc", *proto)
	}
}

type constant struct {
	frondv1.UnimplementedIDServiceServer
}

func (constant) NextSegment(_ context.Context, in *frondv1.NextSegmentRequest) (*frondv1.IDs, error) {
	n := max(in.GetN(), 1)
	first := next.Add(n) - n + 1
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = first + int64(i)
	}
	return &frondv1.IDs{Tag: in.GetTag(), Form: "number", Ids: ids}, nil
}
