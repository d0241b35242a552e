// Command trivial is the baseline of the bench scripts: a server that does
// no work, for each protocol frond speaks, so that whatever frond costs
// above it in the same run is frond's.
//
//	-proto http: a net/http server whose one handler returns a constant
//	  19-digit number as text/plain, with the same server timeouts as frond.
//	-proto resp: a redcon server answering every command with a constant
//	  integer.
//	-proto grpc: a grpc-go server of frond.v1.IDService whose NextSegment
//	  answers constant IDs (as many as asked), with no interceptor.
package main

import (
	"context"
	"flag"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/tidwall/redcon"
	"google.golang.org/grpc"

	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

const id = 2124379261987979264

func main() {
	proto := flag.String("proto", "http", "http, resp or grpc")
	addr := flag.String("addr", "127.0.0.1:18082", "listen address")
	flag.Parse()
	switch *proto {
	case "http":
		body := []byte("2124379261987979264")
		mux := http.NewServeMux()
		mux.HandleFunc("GET /{path...}", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Write(body)
		})
		srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 16 << 10}
		log.Fatal(srv.ListenAndServe())
	case "resp":
		log.Fatal(redcon.ListenAndServe(*addr, func(c redcon.Conn, _ redcon.Command) { c.WriteInt64(id) }, nil, nil))
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
	ids := make([]int64, max(in.GetN(), 1))
	for i := range ids {
		ids[i] = id + int64(i)
	}
	return &frondv1.IDs{Tag: in.GetTag(), Form: "number", Ids: ids}, nil
}
