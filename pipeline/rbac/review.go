package rbac

import (
	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/kubelab/kubelab/pipeline"
)

// ReviewAttributes turns an access review's question into the attributes
// of the request it asks about, as kube-apiserver's SelfSubjectAccessReview
// does: resource attributes with an empty version mean any version
// ("*"); non-resource attributes ask about a path. A spec with neither is
// the caller's to refuse (422); this returns nil for it.
func ReviewAttributes(u pipeline.User, spec authorizationv1.SelfSubjectAccessReviewSpec) *pipeline.Attributes {
	switch {
	case spec.ResourceAttributes != nil:
		ra := spec.ResourceAttributes
		version := ra.Version
		if version == "" {
			version = "*"
		}
		return &pipeline.Attributes{
			User: u, Verb: ra.Verb, IsResourceRequest: true, Namespace: ra.Namespace,
			APIGroup: ra.Group, APIVersion: version, Resource: ra.Resource, Subresource: ra.Subresource, Name: ra.Name,
		}
	case spec.NonResourceAttributes != nil:
		return &pipeline.Attributes{User: u, Verb: spec.NonResourceAttributes.Verb, Path: spec.NonResourceAttributes.Path}
	}
	return nil
}

// AccessReview answers a SelfSubjectAccessReview (`kubectl auth can-i`)
// with the same authorizer that enforces requests, so the two never
// disagree.
func AccessReview(authz pipeline.Authorizer, u pipeline.User, spec authorizationv1.SelfSubjectAccessReviewSpec) authorizationv1.SubjectAccessReviewStatus {
	attrs := ReviewAttributes(u, spec)
	if attrs == nil {
		return authorizationv1.SubjectAccessReviewStatus{EvaluationError: "one of resourceAttributes or nonResourceAttributes must be set"}
	}
	allowed, reason := authz.Authorize(attrs)
	return authorizationv1.SubjectAccessReviewStatus{Allowed: allowed, Reason: reason}
}

// RulesReview answers a SelfSubjectRulesReview (`kubectl auth can-i
// --list`): every rule bound to the user in namespace, split into
// resource and non-resource rules as kube-apiserver does. System:masters
// gets no extra rules here, as in kube: only RBAC rules are listed.
func (a *Authorizer) RulesReview(u pipeline.User, namespace string) authorizationv1.SubjectRulesReviewStatus {
	rules, err := a.RulesFor(u, namespace)
	st := authorizationv1.SubjectRulesReviewStatus{
		ResourceRules:    []authorizationv1.ResourceRule{},
		NonResourceRules: []authorizationv1.NonResourceRule{},
		Incomplete:       !a.isSynced(),
	}
	for _, r := range rules {
		if len(r.Resources) > 0 {
			st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{
				Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames,
			})
		}
		if len(r.NonResourceURLs) > 0 {
			st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{
				Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs,
			})
		}
	}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}
