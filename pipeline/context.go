package pipeline

import "context"

type requestKey struct{}

// request is what the server's front door learned about a request.
type request struct {
	trace *Trace
	// authenticated is who the credentials prove the sender is; user is
	// who the request acts as, which impersonation may make another.
	authenticated, user User
}

// WithRequest carries a request's trace, its authenticated user and the
// user it acts as (the same unless impersonating) to the handlers behind
// the front door. Only code in the server can set it: a client has no way
// to put values into a request's context.
func WithRequest(ctx context.Context, t *Trace, authenticated, user User) context.Context {
	return context.WithValue(ctx, requestKey{}, request{trace: t, authenticated: authenticated, user: user})
}

// FromContext returns the request's trace and the user it acts as, if
// the front door set them.
func FromContext(ctx context.Context) (*Trace, User, bool) {
	r, ok := ctx.Value(requestKey{}).(request)
	return r.trace, r.user, ok
}

// AuthenticatedFromContext returns who sent the request before any
// impersonation: what per-user limits count, since a sender must not get
// a fresh allowance for every name it may act as.
func AuthenticatedFromContext(ctx context.Context) (User, bool) {
	r, ok := ctx.Value(requestKey{}).(request)
	return r.authenticated, ok
}
