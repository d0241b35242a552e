// Package static takes the worker ID from configuration: a number, or the
// ordinal of a Kubernetes StatefulSet pod (the number after the last '-' of
// the host name, such as 3 in frond-3), plus an optional base.
//
//	static:7              worker ID 7
//	static:ordinal        the pod's ordinal: frond-0 is 0, frond-3 is 3
//	static:ordinal+100    the ordinal plus 100 (several StatefulSets sharing one ID space)
//
// A StatefulSet gives each pod a stable, unique ordinal, so nodes need no
// registry server; the last issued time is kept in the data directory by the
// file registry (a persistent volume keeps it across reschedules). Nothing
// stops two pods of different StatefulSets, or two configurations, from
// using one ID: give each set its own base.
package static

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/frond-id/frond"
)

// Node returns the worker ID spec names; hostname is the pod's host name.
func Node(spec, hostname string) (int64, error) {
	rest, ok := strings.CutPrefix(spec, "static:")
	if !ok {
		return 0, fmt.Errorf("%w: static registry %q must start with static:", frond.ErrInvalidArgument, spec)
	}
	what, base, hasBase := strings.Cut(rest, "+")
	var off int64
	if hasBase {
		b, err := strconv.ParseInt(base, 10, 64)
		if err != nil || b < 0 {
			return 0, fmt.Errorf("%w: static registry %q: the base after + must be a number >= 0", frond.ErrInvalidArgument, spec)
		}
		off = b
	}
	if what != "ordinal" {
		if hasBase {
			return 0, fmt.Errorf("%w: static registry %q: a base applies to ordinal only", frond.ErrInvalidArgument, spec)
		}
		n, err := strconv.ParseInt(what, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%w: static registry %q: want static:N (N >= 0) or static:ordinal[+BASE]", frond.ErrInvalidArgument, spec)
		}
		return n, nil
	}
	i := strings.LastIndexByte(hostname, '-')
	ord, err := strconv.ParseInt(hostname[i+1:], 10, 64)
	if i < 0 || err != nil || ord < 0 {
		return 0, fmt.Errorf("%w: static:ordinal: host name %q does not end in -N as a StatefulSet pod's does (frond-3)", frond.ErrInvalidArgument, hostname)
	}
	if off > 0 && ord > (1<<62)-off {
		return 0, fmt.Errorf("%w: static registry %q: ordinal %d + base overflows", frond.ErrInvalidArgument, spec, ord)
	}
	return ord + off, nil
}
