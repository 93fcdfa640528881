package server

import (
	"context"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/server/kubeapi"
)

// studentBinding is the RoleBinding classroom mode gives each student.
const studentBinding = "kubelab-student"

// keptOnReset names, per resource, the one object a reset keeps: the
// namespace's default ServiceAccount, the root CA bundle every namespace
// carries, and the student's RoleBinding.
var keptOnReset = map[schema.GroupResource]string{
	corev1.Resource("serviceaccounts"): "default",
	corev1.Resource("configmaps"):      "kube-root-ca.crt",
	rbacv1.Resource("rolebindings"):    studentBinding,
}

// resetNamespace puts namespace ns back as kubelab made it, for user u:
// everything the labs created in it is deleted, except the namespace and
// what keptOnReset names; then the lesson's pods are made again.
//
// The deletes are u's own deletecollection requests, made in-process
// through the API as u, so RBAC decides and u's tracer shows them, as if
// u's kubectl had sent them. Pods go first: without deletecollection on
// pods in ns, u gets kube's 403 and nothing is deleted. Other resources u
// may not deletecollection there (a student's edit role has no RBAC
// kinds) are left alone, unasked, so that a reset does not fill u's
// tracer with denials. Only once u's deletes have succeeded does kubelab
// itself make the lesson's pods again, in ns alone.
func (s *Server) resetNamespace(ctx context.Context, u pipeline.User, ns string) error {
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	if err := kubeapi.Do(ctx, s.echo, actingFor(u), deleteCollection(pods, ns)); err != nil {
		return err
	}
	for _, gvr := range s.api.NamespacedCollections() {
		if gvr.GroupResource() == pods.GroupResource() || !s.mayDeleteCollection(u, gvr, ns) {
			continue
		}
		if err := kubeapi.Do(ctx, s.echo, actingFor(u), deleteCollection(gvr, ns)); err != nil {
			return err
		}
	}
	labels := map[string]string{}
	if ns != classroom.DemoNamespace {
		labels["kubelab.io/student"] = ns
	}
	return kubeapi.Seed(ctx, s.echo, asInternal, kubeapi.DemoRequests(ns, labels))
}

// mayDeleteCollection asks RBAC, without a trace, whether u may delete
// the collection; the request itself is authorized again, traced.
func (s *Server) mayDeleteCollection(u pipeline.User, gvr schema.GroupVersionResource, ns string) bool {
	ok, _ := s.authz.Authorize(&pipeline.Attributes{User: u, Verb: "deletecollection", IsResourceRequest: true,
		APIGroup: gvr.Group, APIVersion: gvr.Version, Resource: gvr.Resource, Namespace: ns})
	return ok
}

// deleteCollection is the DELETE of gvr's collection in ns, sparing what
// keptOnReset names. Grace period 0: the lesson's pods are made again
// under the same names at once, so the old ones must be gone, not
// terminating.
func deleteCollection(gvr schema.GroupVersionResource, ns string) kubeapi.SeedRequest {
	path := "/apis/" + gvr.Group + "/" + gvr.Version
	if gvr.Group == "" {
		path = "/api/" + gvr.Version
	}
	q := url.Values{"gracePeriodSeconds": {"0"}}
	if keep, ok := keptOnReset[gvr.GroupResource()]; ok {
		q.Set("fieldSelector", "metadata.name!="+keep)
	}
	return kubeapi.SeedRequest{Method: "DELETE", Path: path + "/namespaces/" + url.PathEscape(ns) + "/" + gvr.Resource + "?" + q.Encode()}
}
