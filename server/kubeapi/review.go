package kubeapi

import (
	"net/http"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubelab/kubelab/pipeline"
)

// review answers a create of a question resource, writing nothing.
func (r *request) review() error {
	obj, err := r.readObject()
	if err != nil {
		return err
	}
	answer, err := r.res.Review(r.stages.user, obj)
	if err != nil {
		return err
	}
	return r.respond(http.StatusCreated, answer)
}

// AccessReviewResources are SelfSubjectAccessReview and
// SelfSubjectRulesReview, which `kubectl auth can-i` (and --list) ask:
// the answers come from the same authorizer that enforces.
func AccessReviewResources(can func(pipeline.User, authorizationv1.SelfSubjectAccessReviewSpec) authorizationv1.SubjectAccessReviewStatus,
	rules func(pipeline.User, string) authorizationv1.SubjectRulesReviewStatus) []*Resource {
	gv := authorizationv1.SchemeGroupVersion
	return []*Resource{
		{
			GroupVersion: gv, Name: "selfsubjectaccessreviews", SingularName: "selfsubjectaccessreview", Kind: "SelfSubjectAccessReview",
			Verbs: []string{"create"},
			New:   func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
			Review: func(u pipeline.User, obj runtime.Object) (runtime.Object, error) {
				review := obj.(*authorizationv1.SelfSubjectAccessReview)
				review.Status = can(u, review.Spec)
				return review, nil
			},
		},
		{
			GroupVersion: gv, Name: "selfsubjectrulesreviews", SingularName: "selfsubjectrulesreview", Kind: "SelfSubjectRulesReview",
			Verbs: []string{"create"},
			New:   func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} },
			Review: func(u pipeline.User, obj runtime.Object) (runtime.Object, error) {
				review := obj.(*authorizationv1.SelfSubjectRulesReview)
				review.Status = rules(u, review.Spec.Namespace)
				return review, nil
			},
		},
	}
}
