package server

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/storage"
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
// The deletes are u's own deletecollections, made through the registry
// as u, so RBAC decides and u's tracer shows them, as if u's kubectl had
// sent them. Pods go first: without deletecollection on pods in ns, u
// gets kube's 403 and nothing is deleted. Other resources u may not
// deletecollection there (a student's edit role has no RBAC kinds) are
// left alone, unasked, so that a reset does not fill u's tracer with
// denials. Only once u's deletes have succeeded does kubelab itself make
// the lesson's pods again, in ns alone.
func (s *Server) resetNamespace(ctx context.Context, u pipeline.User, ns string) error {
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	asUser := registry.WithUser(ctx, u)
	if err := s.deleteCollection(asUser, pods, ns); err != nil {
		return err
	}
	for _, gvr := range s.api.NamespacedCollections() {
		if gvr.GroupResource() == pods.GroupResource() || !s.mayDeleteCollection(u, gvr, ns) {
			continue
		}
		if err := s.deleteCollection(asUser, gvr, ns); err != nil {
			return err
		}
	}
	labels := map[string]string{}
	if ns != classroom.DemoNamespace {
		labels["kubelab.io/student"] = ns
	}
	return s.api.Registry().Make(registry.WithUser(ctx, kubeapi.Seeder), kubeapi.DemoSeeds(ns, labels))
}

// mayDeleteCollection asks RBAC, without a trace, whether u may delete
// the collection; the deletecollection itself is authorized again, traced.
func (s *Server) mayDeleteCollection(u pipeline.User, gvr schema.GroupVersionResource, ns string) bool {
	ok, _ := s.authz.Authorize(&pipeline.Attributes{User: u, Verb: "deletecollection", IsResourceRequest: true,
		APIGroup: gvr.Group, APIVersion: gvr.Version, Resource: gvr.Resource, Namespace: ns})
	return ok
}

// deleteCollection deletes gvr's collection in ns as ctx's user, sparing
// what keptOnReset names. Grace period 0: the lesson's pods are made again
// under the same names at once, so the old ones must be gone, not
// terminating.
func (s *Server) deleteCollection(ctx context.Context, gvr schema.GroupVersionResource, ns string) error {
	store, ok := s.api.Registry().Store(gvr)
	if !ok {
		return fmt.Errorf("%s is not served", gvr)
	}
	list := storage.ListOptions{Namespace: ns}
	if keep, ok := keptOnReset[gvr.GroupResource()]; ok {
		list.Predicate.Field = fields.OneTermNotEqualSelector("metadata.name", keep)
	}
	_, err := store.DeleteCollection(ctx, list, registry.DeleteOptions{GracePeriodSeconds: new(int64)})
	return err
}
