package controlplane

import (
	"context"
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

// frontDoorKey marks a request's context: it came through kubelab's
// front door (its port, its Origin check, its limits), not straight to the
// kube core's loopback listener.
type frontDoorKey struct{}

func throughFrontDoor(ctx context.Context) context.Context {
	return context.WithValue(ctx, frontDoorKey{}, true)
}

func cameThroughFrontDoor(ctx context.Context) bool {
	v, _ := ctx.Value(frontDoorKey{}).(bool)
	return v
}

// AdminUser is who kubelab's admin token authenticates as: a member of
// system:masters, as kubeadm's admin.conf.
const AdminUser = "kubelab-admin"

// frontDoorAuthenticator gives a request that came through the front door
// the identity kubelab's trust model gives it, before kube's own
// authenticators see it:
//   - kubelab's admin token is the admin;
//   - no credentials at all is system:anonymous, as kube-apiserver's
//     --anonymous-auth would make it (kube's own is off, so that nothing
//     reaching the loopback listener directly is anonymous);
//   - any other credential is left to kube (service-account tokens).
type frontDoorAuthenticator struct {
	isAdmin func(token string) bool
}

var _ authenticator.Request = frontDoorAuthenticator{}

func (a frontDoorAuthenticator) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	if !cameThroughFrontDoor(r.Context()) {
		return nil, false, nil
	}
	auth := strings.TrimSpace(r.Header.Get("Authorization"))
	if auth == "" && (r.TLS == nil || len(r.TLS.PeerCertificates) == 0) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}}, true, nil
	}
	scheme, token, ok := strings.Cut(auth, " ")
	if ok && strings.EqualFold(scheme, "bearer") && a.isAdmin != nil && a.isAdmin(strings.TrimSpace(token)) {
		// kube removes the header of a request its authenticator accepted.
		r.Header.Del("Authorization")
		return &authenticator.Response{User: &user.DefaultInfo{Name: AdminUser, Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}}, true, nil
	}
	return nil, false, nil
}
