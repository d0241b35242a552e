package api

import (
	"net"
	"net/netip"
	"strings"

	"github.com/frond-id/frond"
)

// Bearer returns the token of an Authorization value "Bearer <token>"; the
// scheme is case-insensitive (RFC 9110), so "bearer x" is read too.
func Bearer(authorization string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// IsLoopback reports whether addr (host:port or host) is on this machine:
// 127.0.0.0/8 or ::1.
func IsLoopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// AdminWithoutToken is the answer to tag administration when no admin
// token is configured: allowed from this machine only (the client's
// address is loopback), so that a node started without admin_token is not
// administered by anyone who can reach its port. It returns nil or an
// *Error of frond.CodeForbidden.
func AdminWithoutToken(remote string) error {
	if IsLoopback(remote) {
		return nil
	}
	return &Error{Code: frond.CodeForbidden,
		Msg: "tag administration without admin_token is allowed only from this machine (loopback): configure admin_token (docs/security.md) to administer tags from elsewhere"}
}
