package registry

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

var (
	readWrite = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	coreV1    = corev1.SchemeGroupVersion
	rbacV1    = rbacv1.SchemeGroupVersion
)

// BuiltinResources are the kinds kubelab serves out of the box: the core
// kinds the lesson touches and RBAC's four.
func BuiltinResources() []*Resource {
	return append([]*Resource{
		{
			GroupVersion: coreV1, Name: "namespaces", SingularName: "namespace", Kind: "Namespace",
			Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}, ShortNames: []string{"ns"},
			New: func() runtime.Object { return &corev1.Namespace{} }, NewList: func() runtime.Object { return &corev1.NamespaceList{} },
			Attrs: namespaceAttrs, Table: namespaceTable, HasStatus: true,
			Default: defaultNamespace, Validate: validateNamespace, PrepareForCreate: prepareNamespaceForCreate,
		},
		{
			GroupVersion: coreV1, Name: "pods", SingularName: "pod", Kind: "Pod", Namespaced: true,
			Verbs: readWrite, ShortNames: []string{"po"}, Categories: []string{"all"},
			New: func() runtime.Object { return &corev1.Pod{} }, NewList: func() runtime.Object { return &corev1.PodList{} },
			Attrs: podAttrs, Table: podTable, HasStatus: true,
			Default: defaultPod, Validate: validatePod, PrepareForCreate: preparePodForCreate,
		},
		{
			GroupVersion: coreV1, Name: "nodes", SingularName: "node", Kind: "Node",
			Verbs: []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}, ShortNames: []string{"no"},
			New: func() runtime.Object { return &corev1.Node{} }, NewList: func() runtime.Object { return &corev1.NodeList{} },
			Attrs: nodeAttrs, Table: nodeTable, HasStatus: true,
		},
		{
			GroupVersion: coreV1, Name: "configmaps", SingularName: "configmap", Kind: "ConfigMap", Namespaced: true,
			Verbs: readWrite, ShortNames: []string{"cm"},
			New: func() runtime.Object { return &corev1.ConfigMap{} }, NewList: func() runtime.Object { return &corev1.ConfigMapList{} },
			Table: configMapTable, Validate: validateConfigMap,
		},
		{
			GroupVersion: coreV1, Name: "secrets", SingularName: "secret", Kind: "Secret", Namespaced: true,
			Verbs: readWrite,
			New:   func() runtime.Object { return &corev1.Secret{} }, NewList: func() runtime.Object { return &corev1.SecretList{} },
			Attrs: secretAttrs, Table: secretTable, Default: defaultSecret, Validate: validateSecret,
			PrepareForCreate: mergeStringData, PrepareForUpdate: func(obj, _ runtime.Object) { mergeStringData(obj) },
		},
		{
			// Enforced by the ResourceQuota admission plugin; a student's
			// namespace gets one when the student joins.
			GroupVersion: coreV1, Name: "resourcequotas", SingularName: "resourcequota", Kind: "ResourceQuota", Namespaced: true,
			Verbs: readWrite, ShortNames: []string{"quota"},
			New: func() runtime.Object { return &corev1.ResourceQuota{} }, NewList: func() runtime.Object { return &corev1.ResourceQuotaList{} },
			HasStatus: true,
		},
		{
			GroupVersion: coreV1, Name: "serviceaccounts", SingularName: "serviceaccount", Kind: "ServiceAccount", Namespaced: true,
			Verbs: readWrite, ShortNames: []string{"sa"},
			New: func() runtime.Object { return &corev1.ServiceAccount{} }, NewList: func() runtime.Object { return &corev1.ServiceAccountList{} },
			Table: serviceAccountTable,
		},
		{
			GroupVersion: coreV1, Name: "events", SingularName: "event", Kind: "Event", Namespaced: true,
			Verbs: readWrite, ShortNames: []string{"ev"},
			New: func() runtime.Object { return &corev1.Event{} }, NewList: func() runtime.Object { return &corev1.EventList{} },
			Attrs: eventAttrs, Table: eventTable,
		},
		rbacResource("roles", "role", "Role", true, func() runtime.Object { return &rbacv1.Role{} }, func() runtime.Object { return &rbacv1.RoleList{} }, roleTable),
		rbacResource("rolebindings", "rolebinding", "RoleBinding", true, func() runtime.Object { return &rbacv1.RoleBinding{} }, func() runtime.Object { return &rbacv1.RoleBindingList{} }, roleBindingTable),
		rbacResource("clusterroles", "clusterrole", "ClusterRole", false, func() runtime.Object { return &rbacv1.ClusterRole{} }, func() runtime.Object { return &rbacv1.ClusterRoleList{} }, roleTable),
		rbacResource("clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", false, func() runtime.Object { return &rbacv1.ClusterRoleBinding{} }, func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} }, roleBindingTable),
	}, append(workloadResources(), groupResources()...)...)
}

func rbacResource(name, singular, kind string, namespaced bool, newObj, newList func() runtime.Object, table *TableSpec) *Resource {
	r := &Resource{
		GroupVersion: rbacV1, Name: name, SingularName: singular, Kind: kind, Namespaced: namespaced,
		Verbs: readWrite, New: newObj, NewList: newList, Table: table,
		// RBAC's names are path segments (system:controller:x), as in kube.
		ValidateName: path.ValidatePathSegmentName,
	}
	if strings.HasSuffix(kind, "Binding") {
		r.Validate = validateBinding
	}
	return r
}

func podAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	pod := obj.(*corev1.Pod)
	return labels.Set(pod.Labels), fields.Set{
		"metadata.name":            pod.Name,
		"metadata.namespace":       pod.Namespace,
		"spec.nodeName":            pod.Spec.NodeName,
		"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
		"spec.schedulerName":       pod.Spec.SchedulerName,
		"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
		"spec.hostNetwork":         boolString(pod.Spec.HostNetwork),
		"status.phase":             string(pod.Status.Phase),
		"status.podIP":             pod.Status.PodIP,
		"status.nominatedNodeName": pod.Status.NominatedNodeName,
	}, nil
}

// nodeAttrs are the fields kube-apiserver lets a node list select on.
func nodeAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	n := obj.(*corev1.Node)
	return labels.Set(n.Labels), fields.Set{"metadata.name": n.Name, "spec.unschedulable": boolString(n.Spec.Unschedulable)}, nil
}

func namespaceAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	ns := obj.(*corev1.Namespace)
	return labels.Set(ns.Labels), fields.Set{"metadata.name": ns.Name, "status.phase": string(ns.Status.Phase)}, nil
}

func secretAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	s := obj.(*corev1.Secret)
	return labels.Set(s.Labels), fields.Set{"metadata.name": s.Name, "metadata.namespace": s.Namespace, "type": string(s.Type)}, nil
}

func eventAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	e := obj.(*corev1.Event)
	return labels.Set(e.Labels), fields.Set{
		"metadata.name":                  e.Name,
		"metadata.namespace":             e.Namespace,
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             string(e.InvolvedObject.UID),
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         e.Source.Component,
		"type":                           e.Type,
	}, nil
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
