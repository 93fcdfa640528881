package pipeline

import (
	"context"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Authenticator says who sent a request. ok is false only with an error
// (invalid credentials); a request without credentials is Anonymous.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (u User, ok bool, err error)
}

// Authorizer decides whether the user may do what the attributes say.
// The reason explains the decision and goes into the 403 message on denial.
type Authorizer interface {
	Authorize(a *Attributes) (allowed bool, reason string)
}

// Admission runs the admission plugins: Admit the mutating ones (before
// the API's own validation), Validate the validating ones (after it).
// Each returns one record per plugin run.
type Admission interface {
	Admit(ctx context.Context, a *Attributes) ([]Record, error)
	Validate(ctx context.Context, a *Attributes) ([]Record, error)
}

// Publisher takes finished traces; it must not block.
type Publisher interface {
	Publish(Trace)
}

// Pipeline runs the stages it has and records each in the request's trace.
// A nil stage is skipped, which is how a server runs without auth.
type Pipeline struct {
	Authn     Authenticator
	Authz     Authorizer
	Admission Admission
	Traces    Publisher
}

// Authenticate finds the request's user. Invalid credentials are a 401
// Status error, exactly kube's, whatever went wrong (the trace says what);
// with no Authenticator everyone is anonymous.
func (p *Pipeline) Authenticate(t *Trace, r *http.Request) (User, error) {
	if p.Authn == nil {
		return Anonymous(), nil
	}
	sw := StartStage(StageAuthentication, "")
	u, ok, err := p.Authn.AuthenticateRequest(r)
	switch {
	case err == nil && ok:
		t.User = u.Name
		t.Add(sw.Record(Allow, "user "+u.Name))
		return u, nil
	case err == nil || apierrors.IsUnauthorized(err):
		t.Add(sw.Record(Deny, "invalid bearer token"))
	default:
		t.Add(sw.Record(Error, err.Error()))
	}
	return User{}, Unauthorized()
}

// Authorize asks the authorizer; a denial is kube's 403 Forbidden Status.
func (p *Pipeline) Authorize(t *Trace, a *Attributes) error {
	if p.Authz == nil {
		return nil
	}
	sw := StartStage(StageAuthorization, "RBAC")
	allowed, reason := p.Authz.Authorize(a)
	if allowed {
		t.Add(sw.Record(Allow, reason))
		return nil
	}
	err := Forbidden(a, reason)
	t.Add(sw.Record(Deny, err.Error()))
	return err
}

// Admit runs the mutating admission plugins on a.Object.
func (p *Pipeline) Admit(ctx context.Context, t *Trace, a *Attributes) error {
	if p.Admission == nil {
		return nil
	}
	recs, err := p.Admission.Admit(ctx, a)
	t.Add(recs...)
	return err
}

// Validate runs the validating admission plugins.
func (p *Pipeline) Validate(ctx context.Context, t *Trace, a *Attributes) error {
	if p.Admission == nil {
		return nil
	}
	recs, err := p.Admission.Validate(ctx, a)
	t.Add(recs...)
	return err
}

// Finish records the response code and publishes the trace; t must not be
// used afterwards.
func (p *Pipeline) Finish(t *Trace, code int) {
	t.Code = code
	t.Duration = time.Since(t.Time)
	if p.Traces != nil {
		p.Traces.Publish(*t)
	}
}
