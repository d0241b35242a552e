package service

import "context"

// LeaseLimit bounds the IDs a caller takes to hand out itself, as ranges
// (Request.Ranges, Lease and Run: the client libraries' leases, TinyID's
// and CosId's segments, any answer of ranges): IDs that are never used
// still spend the ID space (issue 59, item 7). The caller is the request's context's (api.WithCaller); api.Guard
// implements it (limits.lease_rate).
type LeaseLimit interface {
	// AllowLease refuses a leasing request of ctx's caller while it is
	// past its rate.
	AllowLease(ctx context.Context) error
	// Leased charges n IDs leased to ctx's caller.
	Leased(ctx context.Context, n int64)
}

// SetLeaseLimit sets the lease limit of every protocol's requests, before
// the front doors serve.
func (s *Service) SetLeaseLimit(l LeaseLimit) { s.leases = l }

// leasing reports whether r takes IDs its caller hands out itself.
func (s *Service) leasing(r *Request) bool {
	return s.leases != nil && r.Kind == KindSegment && (r.Ranges || r.Lease || r.Run)
}

// leasedIDs is how many IDs a leasing answer holds.
func leasedIDs(a *Answer) int64 {
	var n int64
	for _, r := range a.Ranges {
		n += r.Len()
	}
	return n + int64(len(a.Nums))
}
