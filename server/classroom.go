package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/server/kubeapi"
	"github.com/kubelab/kubelab/web"
)

// sessionLifetime is how long a browser stays signed in: as long as the
// student's token works.
const sessionLifetime = authn.DefaultTokenLifetime

// Sign-in is rate-limited per client address. A class behind one NAT
// shares an address, so the burst lets a whole class join at once while
// a script guessing join codes is slowed to one try a second.
const (
	signinBurst = 60
	signinRate  = rate.Limit(1)
	// maxLimiters bounds the addresses remembered.
	maxLimiters = 10000
)

// maxTraces is how many of a user's traces can be listed.
const maxTraces = 200

// newClass is classroom mode's class: students kept in etcd, each given a
// namespace with the lesson's pods and an edit RoleBinding there.
func (s *Server) newClass() *classroom.Class {
	return classroom.New(classroom.Config{
		Client:    s.etcd.Client(),
		JoinCode:  s.cfg.JoinCode,
		ClassName: s.cfg.ClassName,
		Tokens:    s.authn,
		Provision: func(ctx context.Context, st classroom.Student) error {
			requests := kubeapi.DemoRequests(st.Name, map[string]string{"kubelab.io/student": st.Name})
			requests = append(requests, kubeapi.SeedRequest{
				Method: "POST", Path: "/apis/rbac.authorization.k8s.io/v1/namespaces/" + st.Name + "/rolebindings", ContentType: "application/json",
				Body: fmt.Sprintf(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"kubelab-student"},`+
					`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},`+
					`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":%q}]}`, st.Name),
			})
			requests = append(requests, studentQuota(st.Name))
			if err := kubeapi.Seed(ctx, s.echo, asInternal, requests); err != nil {
				return err
			}
			return s.waitForAccess(ctx, st.User(), st.Name)
		},
	})
}

// waitForAccess returns once the authorizer's cache has the new student's
// RoleBinding, so that the requests they make the moment they have joined
// are not refused while it catches up (on a busy server it can lag the
// write by a moment).
func (s *Server) waitForAccess(ctx context.Context, u pipeline.User, namespace string) error {
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	attrs := &pipeline.Attributes{User: u, Verb: "list", IsResourceRequest: true, APIVersion: "v1", Resource: "pods", Namespace: namespace}
	for {
		if ok, _ := s.authz.Authorize(attrs); ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the RoleBinding of %s did not take effect: %w", u.Name, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// installClassroom serves what is not the Kubernetes API but is about who
// the user is: sign-in and out, whoami, the kubeconfig download and the
// user's recent traces.
func (s *Server) installClassroom() {
	e := s.echo
	limits := &signinLimits{m: map[string]*rate.Limiter{}}
	e.GET("/signin", s.signinPage, web.SecureHeaders)
	e.POST("/signin", func(c echo.Context) error { return s.signin(c, limits) }, web.SecureHeaders)
	e.POST("/signout", s.signout)
	e.GET("/kubelab/v1/whoami", s.whoami)
	e.GET("/kubelab/v1/kubeconfig", s.downloadKubeconfig)
	e.GET("/kubelab/v1/traces", s.listTraces)
}

// Whoami is the answer of /kubelab/v1/whoami.
type Whoami struct {
	User        pipeline.User `json:"user"`
	DisplayName string        `json:"displayName,omitempty"`
	Namespace   string        `json:"namespace"`
	Student     bool          `json:"student"`
	Classroom   bool          `json:"classroom"`
	// KubectlServer is the HTTPS address a downloaded kubeconfig points at.
	KubectlServer string `json:"kubectlServer,omitempty"`
}

func (s *Server) whoami(c echo.Context) error {
	u := requestUser(c)
	w := Whoami{User: u, Namespace: classroom.NamespaceOf(u), Student: classroom.IsStudent(u), Classroom: s.cfg.Classroom}
	if w.Student && s.class != nil {
		if st, ok, err := s.class.Get(c.Request().Context(), u.Name); err == nil && ok {
			w.DisplayName = st.DisplayName
		}
	}
	if s.cfg.Classroom {
		w.KubectlServer = s.kubectlServer(c.Request())
	}
	return c.JSON(http.StatusOK, w)
}

func requestUser(c echo.Context) pipeline.User {
	_, u, ok := pipeline.FromContext(c.Request().Context())
	if !ok {
		return pipeline.Anonymous()
	}
	return u
}

// signin joins the class: the form's display name and join code in, a
// session cookie and a redirect to the lesson out. API clients that ask
// for JSON get the student and a Status for errors.
func (s *Server) signin(c echo.Context, limits *signinLimits) error {
	r := c.Request()
	if s.class == nil {
		return apierrors.NewNotFound(schemaless("signin"), "")
	}
	if err := http.NewCrossOriginProtection().Check(r); err != nil {
		return apierrors.NewForbidden(schemaless("signin"), "", err)
	}
	if !limits.allow(clientAddr(r)) {
		err := apierrors.NewTooManyRequests("too many sign-in attempts from this address: wait a few seconds and try again", 2)
		return s.signinFailed(c, http.StatusTooManyRequests, err, "tooMany")
	}
	st, token, err := s.class.Join(r.Context(), c.FormValue("name"), c.FormValue("code"))
	switch {
	case errors.Is(err, classroom.ErrWrongJoinCode):
		return s.signinFailed(c, http.StatusForbidden, apierrors.NewForbidden(schemaless("signin"), "", err), "wrongCode")
	case errors.Is(err, classroom.ErrInvalidDisplayName), errors.Is(err, classroom.ErrClassFull):
		return s.signinFailed(c, http.StatusUnprocessableEntity, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid, Message: err.Error(),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "name", Message: err.Error()}}},
		}}, "")
	case err != nil:
		return err
	}
	c.SetCookie(&http.Cookie{
		Name: authn.SessionCookie, Value: token, Path: "/", MaxAge: int(sessionLifetime / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil,
	})
	s.log.Info("student joined", "student", st.Name)
	if wantsJSON(r) {
		return c.JSON(http.StatusCreated, st)
	}
	return c.Redirect(http.StatusSeeOther, safeNext(c.FormValue("next")))
}

// signinFailed answers a refused sign-in: a Status for API clients, the
// page again for a browser, with the message in the page's language
// where there is a translation (key), else the error's own words.
func (s *Server) signinFailed(c echo.Context, code int, err *apierrors.StatusError, key string) error {
	if wantsJSON(c.Request()) {
		return err
	}
	lang := pageLang(c)
	msg := err.ErrStatus.Message
	if t, ok := signinText[lang][key]; ok && key != "" {
		msg = t
	}
	return renderSignin(c, code, signinView{
		Error: msg, Name: c.FormValue("name"), Next: safeNext(c.FormValue("next")),
		NeedsCode: s.cfg.JoinCode != "", Lang: pageLang(c),
	})
}

func (s *Server) signinPage(c echo.Context) error {
	if s.class == nil {
		// Local mode: there is no one to sign in as but the local user.
		return c.Redirect(http.StatusSeeOther, "/")
	}
	return renderSignin(c, http.StatusOK, signinView{NeedsCode: s.cfg.JoinCode != "", Next: safeNext(c.QueryParam("next")), Lang: pageLang(c)})
}

// signout forgets the browser's session: the cookie is cleared and its
// token revoked, so a copy of it is worthless too.
func (s *Server) signout(c echo.Context) error {
	r := c.Request()
	if err := http.NewCrossOriginProtection().Check(r); err != nil {
		return apierrors.NewForbidden(schemaless("signout"), "", err)
	}
	if ck, err := r.Cookie(authn.SessionCookie); err == nil && ck.Value != "" {
		if err := s.authn.Revoke(r.Context(), ck.Value); err != nil {
			s.log.Warn("revoking a session", "err", err)
		}
	}
	c.SetCookie(&http.Cookie{Name: authn.SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil})
	return c.Redirect(http.StatusSeeOther, "/signin")
}

// downloadKubeconfig gives a signed-in user a kubeconfig for their own
// kubectl: the HTTPS address, the CA that signs it, a newly minted token
// for the same identity as the browser's, and their namespace.
func (s *Server) downloadKubeconfig(c echo.Context) error {
	u := requestUser(c)
	if u.IsAnonymous() {
		return pipeline.Unauthorized()
	}
	if !s.cfg.Classroom {
		return apierrors.NewBadRequest("kubelab runs in local mode: use the admin kubeconfig in its data directory")
	}
	token, err := s.authn.Mint(c.Request().Context(), u)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubelab"] = &clientcmdapi.Cluster{Server: s.kubectlServer(c.Request()), CertificateAuthorityData: s.pki.CertPEM()}
	cfg.AuthInfos[u.Name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["kubelab"] = &clientcmdapi.Context{Cluster: "kubelab", AuthInfo: u.Name, Namespace: classroom.NamespaceOf(u)}
	cfg.CurrentContext = "kubelab"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Content-Disposition", `attachment; filename="kubeconfig"`)
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Blob(http.StatusOK, "application/yaml", data)
}

// kubectlServer is the HTTPS address as seen by the client: the host it
// reached kubelab at, with the secure port.
func (s *Server) kubectlServer(r *http.Request) string {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "" {
		host = "127.0.0.1"
	}
	_, port, _ := net.SplitHostPort(s.secureAddr)
	return "https://" + net.JoinHostPort(host, port)
}

// listTraces lists the caller's most recent traces (oldest first), or, for
// an instructor, grader or admin, another user's with ?user=.
func (s *Server) listTraces(c echo.Context) error {
	u := requestUser(c)
	if s.cfg.Classroom && u.IsAnonymous() {
		return pipeline.Unauthorized()
	}
	who := u.Name
	if other := c.QueryParam("user"); other != "" && other != u.Name {
		if !classroom.CanGrade(u) {
			return apierrors.NewForbidden(schemaless("traces"), other, errors.New("only instructors, graders and admins may list another user's traces"))
		}
		who = other
	}
	n := maxTraces
	if l := c.QueryParam("limit"); l != "" {
		v, err := strconv.Atoi(l)
		if err != nil || v < 1 {
			return apierrors.NewBadRequest(fmt.Sprintf("limit %q: want a number from 1 to %d", l, maxTraces))
		}
		n = min(v, maxTraces)
	}
	traces := s.traces.Recent(who, n)
	if traces == nil {
		traces = []pipeline.Trace{}
	}
	return c.JSON(http.StatusOK, map[string]any{"user": who, "traces": traces})
}

type signinLimits struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

func (l *signinLimits) allow(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.m[addr]
	if !ok {
		if len(l.m) >= maxLimiters {
			clear(l.m)
		}
		lim = rate.NewLimiter(signinRate, signinBurst)
		l.m[addr] = lim
	}
	return lim.Allow()
}

// clientAddr is the connection's address: a forwarded-for header could be
// set by anyone, so rate limits do not trust it.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// safeNext keeps a post-sign-in redirect on this site.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || next == "" || u.IsAbs() || u.Host != "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return "/"
	}
	return next
}

func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

// pageLang is the page's language: ?lang=, then the lang cookie, then English.
func pageLang(c echo.Context) string {
	lang := c.QueryParam("lang")
	if lang == "" {
		if ck, err := c.Cookie("lang"); err == nil {
			lang = ck.Value
		}
	}
	if lang == "th" {
		return "th"
	}
	return "en"
}
