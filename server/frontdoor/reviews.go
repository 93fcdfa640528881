package frontdoor

import (
	"context"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/rbac"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/kubeapi"
)

// tokenReviewTimeout bounds a TokenReview's read of a minted token.
const tokenReviewTimeout = 10 * time.Second

// Reviews are the resources the front door answers: the access reviews
// (kubectl auth can-i, from RBAC) and TokenReview (from authentication).
// They are served by the API the front door is assembled over, so they
// are made before it and ask the one fd returns, which the caller sets
// once Assemble has returned and before the API serves.
func Reviews(fd func() *FrontDoor) []*registry.Resource {
	return append(kubeapi.AccessReviewResources(
		func(u pipeline.User, spec authorizationv1.SelfSubjectAccessReviewSpec) authorizationv1.SubjectAccessReviewStatus {
			return rbac.AccessReview(fd().Authz, u, spec)
		},
		func(u pipeline.User, ns string) authorizationv1.SubjectRulesReviewStatus {
			return fd().Authz.RulesReview(u, ns)
		},
	), kubeapi.TokenReviewResource(func(token string) (pipeline.User, bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), tokenReviewTimeout)
		defer cancel()
		return fd().Authn.AuthenticateToken(ctx, token)
	}))
}
