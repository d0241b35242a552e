package keyseq

import (
	"fmt"
	"strconv"
	"strings"
)

// RouteHeader is the header (gRPC metadata) of an answer of keyed sequence
// values that says the key's section, the space's sections and whether the
// node that answered serves that section (Route): a client sends the
// section's next keys straight to its owner, one hop rather than two
// (issue 58, item 6).
const RouteHeader = "frond-seq-section"

// MaxRouteSections bounds the sections a client keeps a route for (a
// header naming more is ignored): a client's table is 4 bytes a section.
const MaxRouteSections = 1 << 16

// Route is what RouteHeader says: "5/1024 self" (the node that answered
// serves section 5 of 1,024) or "5/1024 other" (it sent the request on).
type Route struct {
	Section, Sections int
	Mine              bool
}

func (r Route) String() string {
	owner := "other"
	if r.Mine {
		owner = "self"
	}
	return fmt.Sprintf("%d/%d %s", r.Section, r.Sections, owner)
}

// ParseRoute reads RouteHeader's value; ok false for anything else.
func ParseRoute(v string) (r Route, ok bool) {
	pos, owner, ok := strings.Cut(v, " ")
	if !ok || owner != "self" && owner != "other" {
		return Route{}, false
	}
	sec, n, ok := strings.Cut(pos, "/")
	if !ok {
		return Route{}, false
	}
	var err1, err2 error
	r.Section, err1 = strconv.Atoi(sec)
	r.Sections, err2 = strconv.Atoi(n)
	if err1 != nil || err2 != nil || r.Sections < 1 || r.Sections > MaxRouteSections || r.Section < 0 || r.Section >= r.Sections {
		return Route{}, false
	}
	r.Mine = owner == "self"
	return r, true
}
