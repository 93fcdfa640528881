package registry

import (
	"context"

	"github.com/kubelab/kubelab/pipeline"
)

// APIServer is who kube-apiserver's own writes act as (its bootstrap
// policy, its system namespaces and services, the APIServices it
// registers), as kube-apiserver's loopback client is: in system:masters,
// so RBAC allows it everything.
var APIServer = pipeline.User{Name: "system:apiserver", Groups: []string{pipeline.SystemPrivilegedGroup, pipeline.AllAuthenticated}}

// APIServerFieldManager is the field manager of what kube-apiserver
// writes itself, as its managedFields name it on a real cluster.
const APIServerFieldManager = "kube-apiserver"

// Controller is the identity of one of kube-controller-manager's
// controllers, named as kube names their service accounts with
// --use-service-account-credentials ("namespace-controller" acts as
// system:serviceaccount:kube-system:namespace-controller). kubelab's
// bootstrap policy has no system:controller:* roles, so a controller is
// trusted as the controller manager is: through system:masters.
func Controller(name string) pipeline.User {
	return pipeline.User{Name: "system:serviceaccount:kube-system:" + name, Groups: []string{
		"system:serviceaccounts", "system:serviceaccounts:kube-system", pipeline.SystemPrivilegedGroup, pipeline.AllAuthenticated,
	}}
}

// Node is the identity of a node's kubelet, as kube names it.
func Node(name string) pipeline.User {
	return pipeline.User{Name: "system:node:" + name, Groups: []string{"system:nodes", pipeline.SystemPrivilegedGroup, pipeline.AllAuthenticated}}
}

type userKey struct{}

// WithUser makes every call with ctx act as u, in process: authorized by
// RBAC, admitted and traced as u's, as the same call from u's kubectl
// would be. Each write gets a trace of its own, published when it ends.
// kubelab's components call with their system identity (APIServer,
// Controller, Node); work done for a signed-in user (a lab's reset) is
// done as that user, so RBAC decides what it may touch.
func WithUser(ctx context.Context, u pipeline.User) context.Context {
	// A call made while serving a request (admission charging a quota) is
	// the caller's own, not part of the request being served.
	ctx = context.WithValue(ctx, requestKey{}, handled{})
	return context.WithValue(ctx, userKey{}, u)
}

type requestKey struct{}

// handled is a request that came through the REST handler: the front
// door traced and authenticated it, the handler authorized it.
type handled struct {
	trace *pipeline.Trace
	attrs *pipeline.Attributes
}

// WithAuthorizedRequest tells the stores that the REST handler has
// authorized attrs for this request, whose trace the front door
// publishes: a store adds its stages to that trace and does not authorize
// again (as kube-apiserver authorizes in a filter before its handlers).
func WithAuthorizedRequest(ctx context.Context, t *pipeline.Trace, attrs *pipeline.Attributes) context.Context {
	return context.WithValue(ctx, requestKey{}, handled{trace: t, attrs: attrs})
}
