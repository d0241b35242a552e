// Package frondv1 is the generated Go code of frond's gRPC API
// (frond.proto): the messages and the IDService client and server. Do not
// edit the .pb.go files: change frond.proto and run go generate.
package frondv1

//go:generate bash ../../gen.sh
