package service

import "context"

// LeaseLimit bounds the IDs a caller takes to hand out itself, as ranges
// (Request.Ranges, Lease and Run: the client libraries' leases, TinyID's
// and CosId's segments, any answer of ranges): IDs that are never used
// still spend the ID space (issue 59, item 7). The caller is the request's context's (api.WithCaller); api.Guard
// implements it (limits.lease_rate).
type LeaseLimit interface {
	// AllowLease refuses a leasing request of ctx's caller while it is
	// past its rate, and charges the n IDs it asks for when it admits it:
	// requests in flight at once are charged each before the next is
	// admitted (issue 69: charged after their answers, 500 at once took
	// 1.3-2.2 × 10^8 IDs under a burst of 1,000).
	AllowLease(ctx context.Context, n int64) error
	// Leased settles a request admitted by AllowLease: n more IDs charged
	// to ctx's caller (negative: given back, when the answer held fewer
	// than were asked for, or none).
	Leased(ctx context.Context, n int64)
}

// SetLeaseLimit sets the lease limit of every protocol's requests, before
// the front doors serve.
func (s *Service) SetLeaseLimit(l LeaseLimit) { s.leases = l }

// leasing reports whether r takes IDs its caller hands out itself.
func (s *Service) leasing(r *Request) bool {
	return s.leases != nil && r.Kind == KindSegment && (r.Ranges || r.Lease || r.Run)
}

// askedIDs is how many IDs a leasing request asks for, charged when it is
// admitted: its count, or 1 for a run of the tag's step (TinyID's
// segments: the step is charged when the answer comes, Leased).
func askedIDs(r *Request) int64 { return max(r.Count, 1) }

// leasedIDs is how many IDs a leasing answer holds.
func leasedIDs(a *Answer) int64 {
	var n int64
	for _, r := range a.Ranges {
		n += r.Len()
	}
	return n + int64(len(a.Nums))
}
