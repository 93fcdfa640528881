package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/pipeline"
)

// The default policy below is kube-apiserver's bootstrap policy
// (plugin/pkg/auth/authorizer/rbac/bootstrappolicy) for the roles a
// learner meets: the user-facing roles with their aggregation, and the
// discovery roles every client needs. Rules are kept exactly as kube
// ships them (sorted, as kube's rule builder sorts), also for resources
// kubelab does not serve, so `kubectl describe clusterrole edit` and
// `kubectl auth can-i --list` read as on a real cluster.

// Labels and annotations kube puts on its bootstrap policy.
const (
	BootstrapLabel       = "kubernetes.io/bootstrapping"
	AutoupdateAnnotation = "rbac.authorization.kubernetes.io/autoupdate"
	AggregateToAdmin     = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEdit      = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToView      = "rbac.authorization.k8s.io/aggregate-to-view"
)

var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "delete", "deletecollection", "patch", "update"}
	readWrite = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
)

func rule(verbs []string, group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: []string{group}, Resources: resources}
}

func urls(verbs []string, paths ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: paths}
}

func clusterRole(name string, extraLabels map[string]string, aggregateFrom string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	l := map[string]string{BootstrapLabel: "rbac-defaults"}
	for k, v := range extraLabels {
		l[k] = v
	}
	r := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{AutoupdateAnnotation: "true"}},
		Rules:      rules,
	}
	if aggregateFrom != "" {
		r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{aggregateFrom: "true"}}}}
	}
	return r
}

// BootstrapClusterRoles returns fresh copies of the default ClusterRoles.
// admin, edit and view are aggregated: their rules are filled from the
// system:aggregate-to-* roles (see AggregatedRules).
func BootstrapClusterRoles() []*rbacv1.ClusterRole {
	return []*rbacv1.ClusterRole{
		clusterRole("cluster-admin", nil, "",
			rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			urls([]string{"*"}, "*")),
		clusterRole("admin", nil, AggregateToAdmin),
		clusterRole("edit", map[string]string{AggregateToAdmin: "true"}, AggregateToEdit),
		clusterRole("view", map[string]string{AggregateToEdit: "true"}, AggregateToView),
		clusterRole("system:aggregate-to-admin", map[string]string{AggregateToAdmin: "true"}, "",
			rule([]string{"create"}, "authorization.k8s.io", "localsubjectaccessreviews"),
			rule(readWrite, "rbac.authorization.k8s.io", "rolebindings", "roles")),
		clusterRole("system:aggregate-to-edit", map[string]string{AggregateToEdit: "true"}, "", aggregateToEditRules()...),
		clusterRole("system:aggregate-to-view", map[string]string{AggregateToView: "true"}, "", aggregateToViewRules()...),
		clusterRole("system:basic-user", nil, "",
			rule([]string{"create"}, "authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule([]string{"create"}, "authentication.k8s.io", "selfsubjectreviews")),
		clusterRole("system:discovery", nil, "",
			urls([]string{"get"}, "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/")),
		clusterRole("system:public-info-viewer", nil, "",
			urls([]string{"get"}, "/healthz", "/livez", "/readyz", "/version", "/version/")),
	}
}

func aggregateToEditRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(read, "", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"),
		rule([]string{"impersonate"}, "", "serviceaccounts"),
		rule(write, "", "pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"),
		rule([]string{"create"}, "", "pods/eviction"),
		rule(write, "", "configmaps", "events", "persistentvolumeclaims", "replicationcontrollers", "replicationcontrollers/scale",
			"secrets", "serviceaccounts", "services", "services/proxy"),
		rule([]string{"create"}, "", "serviceaccounts/token"),
		rule(write, "apps", "daemonsets", "deployments", "deployments/rollback", "deployments/scale", "replicasets",
			"replicasets/scale", "statefulsets", "statefulsets/scale"),
		rule(write, "autoscaling", "horizontalpodautoscalers"),
		rule(write, "batch", "cronjobs", "jobs"),
		rule(write, "extensions", "daemonsets", "deployments", "deployments/rollback", "deployments/scale", "ingresses",
			"networkpolicies", "replicasets", "replicasets/scale", "replicationcontrollers/scale"),
		rule(write, "policy", "poddisruptionbudgets"),
		rule(write, "networking.k8s.io", "ingresses", "networkpolicies"),
		rule(readWrite, "coordination.k8s.io", "leases"),
	}
}

func aggregateToViewRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(read, "", "configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "pods",
			"replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services", "services/status"),
		rule(read, "", "bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
			"replicationcontrollers/status", "resourcequotas", "resourcequotas/status"),
		// Reading namespaces in a namespace-scoped binding means reading
		// that one namespace: how a student sees their own.
		rule(read, "", "namespaces"),
		rule(read, "discovery.k8s.io", "endpointslices"),
		rule(read, "apps", "controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
			"deployments/status", "replicasets", "replicasets/scale", "replicasets/status", "statefulsets", "statefulsets/scale",
			"statefulsets/status"),
		rule(read, "autoscaling", "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
		rule(read, "batch", "cronjobs", "cronjobs/status", "jobs", "jobs/status"),
		rule(read, "extensions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
			"ingresses", "ingresses/status", "networkpolicies", "replicasets", "replicasets/scale", "replicasets/status",
			"replicationcontrollers/scale"),
		rule(read, "policy", "poddisruptionbudgets", "poddisruptionbudgets/status"),
		rule(read, "networking.k8s.io", "ingresses", "ingresses/status", "networkpolicies"),
	}
}

func clusterBinding(role string, groups ...string) *rbacv1.ClusterRoleBinding {
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role, Labels: map[string]string{BootstrapLabel: "rbac-defaults"},
			Annotations: map[string]string{AutoupdateAnnotation: "true"}},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
	}
	for _, g := range groups {
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: g})
	}
	return b
}

// BootstrapClusterRoleBindings returns fresh copies of the default
// ClusterRoleBindings: cluster-admin for system:masters, discovery and
// basic-user for every authenticated user, and the public info (health,
// version) for everyone, signed in or not.
func BootstrapClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	return []*rbacv1.ClusterRoleBinding{
		clusterBinding("cluster-admin", pipeline.SystemPrivilegedGroup),
		clusterBinding("system:basic-user", pipeline.AllAuthenticated),
		clusterBinding("system:discovery", pipeline.AllAuthenticated),
		clusterBinding("system:public-info-viewer", pipeline.AllAuthenticated, pipeline.AllUnauthenticated),
	}
}
