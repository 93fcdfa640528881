package server

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/storage"
)

// studentBinding is the RoleBinding classroom mode gives each student.
const studentBinding = "kubelab-student"

// resetNamespace puts a namespace back as kubelab made it: everything the
// labs created in it is deleted, except the namespace itself, its default
// ServiceAccount and the student's RoleBinding; then the lesson's pods are
// made again through the API, as at provisioning.
func (s *Server) resetNamespace(ctx context.Context, ns string) error {
	var errs []error
	for _, st := range s.api.NamespacedStores() {
		list, err := st.List(ctx, storage.ListOptions{Namespace: ns})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, obj := range list.Items {
			if keptOnReset(obj) {
				continue
			}
			m, err := meta.Accessor(obj)
			if err != nil {
				continue
			}
			if _, err := st.Delete(ctx, storage.Key{Namespace: ns, Name: m.GetName()}, nil); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting %s: %w", m.GetName(), err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	labels := map[string]string{}
	if ns != classroom.DemoNamespace {
		labels["kubelab.io/student"] = ns
	}
	return kubeapi.Seed(ctx, s.echo, asInternal, kubeapi.DemoRequests(ns, labels))
}

func keptOnReset(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *corev1.ServiceAccount:
		return o.Name == "default"
	case *rbacv1.RoleBinding:
		return o.Name == studentBinding
	case *corev1.ConfigMap:
		// The root CA bundle every namespace carries.
		return o.Name == "kube-root-ca.crt"
	}
	return false
}
