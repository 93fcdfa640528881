package pipeline

import "context"

type requestKey struct{}

// request is what the server's front door learned about a request.
type request struct {
	trace *Trace
	user  User
}

// WithRequest carries a request's trace and authenticated user to the
// handlers behind the front door. Only code in the server can set it: a
// client has no way to put values into a request's context.
func WithRequest(ctx context.Context, t *Trace, u User) context.Context {
	return context.WithValue(ctx, requestKey{}, request{trace: t, user: u})
}

// FromContext returns the request's trace and user, if the front door set them.
func FromContext(ctx context.Context) (*Trace, User, bool) {
	r, ok := ctx.Value(requestKey{}).(request)
	return r.trace, r.user, ok
}
