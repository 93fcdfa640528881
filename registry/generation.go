package registry

import "k8s.io/apimachinery/pkg/runtime/schema"

// generationTracked are the built-in resources whose kube-apiserver
// strategies keep metadata.generation: 1 on create, one more on each change
// of the spec. The others (ConfigMaps, Secrets, Services, Namespaces,
// Leases, ...) have none, so `kubectl get -o yaml` shows it where a cluster
// would. CRDs and custom resources keep it too.
var generationTracked = map[schema.GroupResource]bool{
	{Group: "", Resource: "pods"}:                                                        true,
	{Group: "", Resource: "podtemplates"}:                                                true,
	{Group: "", Resource: "replicationcontrollers"}:                                      true,
	{Group: "apps", Resource: "deployments"}:                                             true,
	{Group: "apps", Resource: "replicasets"}:                                             true,
	{Group: "apps", Resource: "statefulsets"}:                                            true,
	{Group: "apps", Resource: "daemonsets"}:                                              true,
	{Group: "batch", Resource: "jobs"}:                                                   true,
	{Group: "batch", Resource: "cronjobs"}:                                               true,
	{Group: "autoscaling", Resource: "horizontalpodautoscalers"}:                         true,
	{Group: "policy", Resource: "poddisruptionbudgets"}:                                  true,
	{Group: "networking.k8s.io", Resource: "ingresses"}:                                  true,
	{Group: "networking.k8s.io", Resource: "ingressclasses"}:                             true,
	{Group: "networking.k8s.io", Resource: "networkpolicies"}:                            true,
	{Group: "discovery.k8s.io", Resource: "endpointslices"}:                              true,
	{Group: "scheduling.k8s.io", Resource: "priorityclasses"}:                            true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}: true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}:   true,
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}:               true,
}

// TracksGeneration reports whether the resource's objects keep
// metadata.generation.
func (r *Resource) TracksGeneration() bool {
	return r.Custom || generationTracked[r.GroupResource()]
}
