package kubeapi

import (
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// the answers come from the same authorizer that enforces; and
// SelfSubjectReview, which `kubectl auth whoami` asks: the user the
// request was served as.
func AccessReviewResources(can func(pipeline.User, authorizationv1.SelfSubjectAccessReviewSpec) authorizationv1.SubjectAccessReviewStatus,
	rules func(pipeline.User, string) authorizationv1.SubjectRulesReviewStatus) []*Resource {
	gv := authorizationv1.SchemeGroupVersion
	return []*Resource{
		{
			GroupVersion: authenticationv1.SchemeGroupVersion, Name: "selfsubjectreviews", SingularName: "selfsubjectreview", Kind: "SelfSubjectReview",
			Verbs: []string{"create"},
			New:   func() runtime.Object { return &authenticationv1.SelfSubjectReview{} },
			Review: func(u pipeline.User, obj runtime.Object) (runtime.Object, error) {
				review := obj.(*authenticationv1.SelfSubjectReview)
				review.Status.UserInfo = authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
				if len(u.Extra) > 0 {
					review.Status.UserInfo.Extra = map[string]authenticationv1.ExtraValue{}
					for k, v := range u.Extra {
						review.Status.UserInfo.Extra[k] = v
					}
				}
				return review, nil
			},
		},
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

// TokenReviewResource is authentication.k8s.io's TokenReview: who a bearer
// token belongs to, answered by the same authenticator that admits
// requests (a webhook token authenticator elsewhere asks exactly this).
func TokenReviewResource(authenticate func(token string) (pipeline.User, bool, error)) *Resource {
	gv := authenticationv1.SchemeGroupVersion
	return &Resource{
		GroupVersion: gv, Name: "tokenreviews", SingularName: "tokenreview", Kind: "TokenReview",
		Verbs: []string{"create"},
		New:   func() runtime.Object { return &authenticationv1.TokenReview{} },
		Review: func(_ pipeline.User, obj runtime.Object) (runtime.Object, error) {
			review := obj.(*authenticationv1.TokenReview)
			if review.Spec.Token == "" {
				return nil, apierrors.NewBadRequest("spec.token must be set")
			}
			u, ok, err := authenticate(review.Spec.Token)
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: ok && err == nil}
			if err != nil {
				review.Status.Error = err.Error()
			}
			if review.Status.Authenticated {
				review.Status.User = authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
				for k, v := range u.Extra {
					if review.Status.User.Extra == nil {
						review.Status.User.Extra = map[string]authenticationv1.ExtraValue{}
					}
					review.Status.User.Extra[k] = v
				}
			}
			return review, nil
		},
	}
}
