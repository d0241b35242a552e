package api

import (
	"crypto/rand"
	"encoding/hex"
)

// RequestIDHeader carries a request's ID on HTTP (and, lower case, as gRPC
// metadata): a caller's ID is kept and answered back, so that its logs and
// frond's access log can be joined.
const RequestIDHeader = "X-Request-ID"

// maxRequestID bounds a caller's request ID.
const maxRequestID = 128

// RequestID is the ID of a request: the caller's, when it is 1 to 128
// printable ASCII characters without spaces; else, with generate, a new
// random one (16 hex digits); else "".
func RequestID(caller string, generate bool) string {
	if validRequestID(caller) {
		return caller
	}
	if !generate {
		return ""
	}
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func validRequestID(s string) bool {
	if s == "" || len(s) > maxRequestID {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
