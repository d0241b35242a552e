// Package deadline bounds one call to a backend.
package deadline

import (
	"context"
	"time"
)

// Within returns ctx bounded to at most d from now: ctx itself (with a
// cancel) when its own deadline comes sooner, so a caller's shorter deadline
// is kept and a longer one (or none) is cut to d.
func Within(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
