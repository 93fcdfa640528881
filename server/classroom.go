package server

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubelab/kubelab/classroom"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/admission"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/frontdoor"
	"github.com/kubelab/kubelab/web"
	"github.com/kubelab/kubelab/web/i18n"
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
		Client:             s.etcd.Client(),
		JoinCode:           s.cfg.JoinCode,
		ClassName:          s.cfg.ClassName,
		MaxStudents:        s.cfg.MaxStudents,
		MaxJoinsPerAddress: s.cfg.MaxJoinsPerAddress,
		Tokens:             s.authn,
		Provision: func(ctx context.Context, st classroom.Student) error {
			// The RBAC check comes first, so a name that is someone
			// else's leaves no namespace behind.
			if taken, err := s.userNameTaken(ctx, st.Name); err != nil {
				return err
			} else if taken {
				return fmt.Errorf("%w: RBAC names a user %s", classroom.ErrNameTaken, st.Name)
			}
			if err := s.claimStudentNamespace(ctx, st.Name); err != nil {
				return err
			}
			if err := s.api.Registry().Make(registry.WithUser(ctx, provisioner), append(studentSeeds(st.Name), studentQuota(st.Name))); err != nil {
				return err
			}
			if err := s.waitForQuota(ctx, st.Name); err != nil {
				return err
			}
			return s.waitForAccess(ctx, st.User(), st.Name)
		},
	})
}

// displayNames are the names the class's students typed, for the grader;
// none in local mode. The class is made after the quizzes are installed,
// so it is looked up when asked.
func (s *Server) displayNames(ctx context.Context) (map[string]string, error) {
	if s.class == nil {
		return nil, nil
	}
	return s.class.DisplayNames(ctx)
}

// students are those who joined the class; none outside one.
func (s *Server) students(ctx context.Context) ([]classroom.Student, error) {
	if s.class == nil {
		return nil, nil
	}
	return s.class.Students(ctx)
}

// waitForQuota returns once the quota controller has counted what the new
// namespace holds: its quota's status is what the controller would write
// now. Until then the student's first requests would race the controller's
// writes (and kube's quota admission refuses requests while a quota's
// status is unknown); after, the namespace is quiet until the student acts.
func (s *Server) waitForQuota(ctx context.Context, namespace string) error {
	ctx, cancel := context.WithTimeout(ctx, frontdoor.SyncTimeout)
	defer cancel()
	for {
		settled, err := s.QuotaSettled(ctx, namespace)
		if err != nil || settled {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the ResourceQuota of %s was not counted: %w", namespace, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// QuotaSettled says whether every ResourceQuota of namespace has the
// status the quota controller would write now: after a write its count
// (stored bytes above all, which admission only estimates) is corrected
// a moment later, and a test that counts etcd's writes waits for that.
func (s *Server) QuotaSettled(ctx context.Context, namespace string) (bool, error) {
	quotas, err := s.quotas.Unindexed().Quotas(ctx, namespace)
	if err != nil {
		return false, err
	}
	for _, q := range quotas {
		used, err := admission.QuotaUsed(ctx, frontdoor.Usage{API: s.api}, namespace, q.Spec.Hard)
		if err != nil {
			return false, err
		}
		if !apiequality.Semantic.DeepEqual(used, q.Status.Used) || !apiequality.Semantic.DeepEqual(q.Spec.Hard, q.Status.Hard) {
			return false, nil
		}
	}
	return true, nil
}

// waitForAccess returns once the authorizer's cache has the new student's
// RoleBinding, so that the requests they make the moment they have joined
// are not refused while it catches up (on a busy server it can lag the
// write by a moment).
func (s *Server) waitForAccess(ctx context.Context, u pipeline.User, namespace string) error {
	ctx, cancel := context.WithTimeout(ctx, frontdoor.SyncTimeout)
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
// the user is: sign-in and out, whoami, the kubeconfig download, the
// user's recent traces, and an instructor's removing a student.
func (s *Server) installClassroom() {
	e := s.echo
	limits := newSigninLimits()
	e.GET("/signin", s.signinPage, web.SecureHeaders)
	e.POST("/signin", func(c echo.Context) error { return s.signin(c, limits) }, web.SecureHeaders)
	e.POST("/signout", s.signout)
	e.GET("/kubelab/v1/whoami", s.whoami)
	e.POST(KubeconfigPath, s.downloadKubeconfig)
	e.GET(KubeconfigPath, kubeconfigByGet)
	e.GET("/kubelab/v1/traces", s.listTraces)
	e.DELETE(StudentsPath+"/:name", s.apiRemoveStudent)
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
	if !limits.allow(clientAddr(r)) {
		err := apierrors.NewTooManyRequests("too many sign-in attempts from this address: wait a few seconds and try again", 2)
		return s.signinFailed(c, http.StatusTooManyRequests, err, "tooMany")
	}
	st, token, err := s.class.Join(r.Context(), c.FormValue("name"), c.FormValue("code"), clientAddr(r))
	switch {
	case errors.Is(err, classroom.ErrWrongJoinCode):
		return s.signinFailed(c, http.StatusForbidden, apierrors.NewForbidden(schemaless("signin"), "", err), "wrongCode")
	case errors.Is(err, classroom.ErrNoSeatLeft):
		return s.signinFailed(c, http.StatusForbidden, apierrors.NewForbidden(schemaless("signin"), "", err), "noSeatLeft")
	case errors.Is(err, classroom.ErrAddressFull):
		s.log.Warn("sign-in refused: enough students joined from the address; a class behind one NAT or proxy needs --max-joins-per-address=0 or --proxy-protocol-from", "from", clientAddr(r), "limit", s.cfg.MaxJoinsPerAddress)
		return s.signinFailed(c, http.StatusForbidden, apierrors.NewForbidden(schemaless("signin"), "", err), "addressFull")
	case errors.Is(err, classroom.ErrInvalidDisplayName), errors.Is(err, classroom.ErrClassFull):
		return s.signinFailed(c, http.StatusUnprocessableEntity, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid, Message: err.Error(),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "name", Message: err.Error()}}},
		}}, "")
	case err != nil:
		return err
	}
	c.SetCookie(authn.NewSessionCookie(r, token, sessionLifetime))
	s.log.Info("student joined", "student", st.Name, "displayName", st.DisplayName)
	if wantsJSON(r) {
		return c.JSON(http.StatusCreated, st)
	}
	return c.Redirect(http.StatusSeeOther, web.LocalPath(c.FormValue("next")))
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
		Error: msg, Name: c.FormValue("name"), Next: web.LocalPath(c.FormValue("next")),
		NeedsCode: s.cfg.JoinCode != "", Lang: pageLang(c),
	})
}

func (s *Server) signinPage(c echo.Context) error {
	if s.class == nil {
		// Local mode: there is no one to sign in as but the local user.
		return c.Redirect(http.StatusSeeOther, "/")
	}
	return renderSignin(c, http.StatusOK, signinView{NeedsCode: s.cfg.JoinCode != "", Next: web.LocalPath(c.QueryParam("next")), Lang: pageLang(c)})
}

// signout ends the browser's sign-in: the cookie is cleared, and its token
// and every kubeconfig downloaded with it are revoked, so neither a copy of
// the cookie nor a forgotten kubeconfig outlives it.
func (s *Server) signout(c echo.Context) error {
	r := c.Request()
	if ck, err := r.Cookie(authn.SessionCookieName(r)); err == nil && ck.Value != "" {
		if err := s.authn.RevokeSignIn(r.Context(), ck.Value); err != nil {
			s.log.Warn("revoking a sign-in", "err", err)
		}
	}
	c.SetCookie(authn.NewSessionCookie(r, "", 0))
	return c.Redirect(http.StatusSeeOther, "/signin")
}

// KubeconfigPath is where a signed-in browser gets a kubeconfig, by POST.
const KubeconfigPath = "/kubelab/v1/kubeconfig"

// kubeconfigByGet refuses a GET: a kubeconfig mints a token, and a GET is
// what any page can make the browser send, with its cookie, from an <img>
// or a link. Only kubelab's own form POSTs (checked for their origin).
func kubeconfigByGet(echo.Context) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed, Reason: metav1.StatusReasonMethodNotAllowed,
		Message: "a kubeconfig mints a token, so it is downloaded with a POST: use the kubeconfig button on kubelab's pages",
	}}
}

// downloadKubeconfig gives a signed-in browser a kubeconfig for its own
// kubectl: the HTTPS address, the CA that signs it, a newly minted token
// in the browser's sign-in (revoked with it at sign-out), and the user's
// namespace. The session cookie names the sign-in; the authenticator has
// already refused it on a cross-origin POST.
func (s *Server) downloadKubeconfig(c echo.Context) error {
	r := c.Request()
	if requestUser(c).IsAnonymous() {
		return pipeline.Unauthorized()
	}
	if !s.cfg.Classroom {
		return apierrors.NewBadRequest("kubelab runs in local mode: use the admin kubeconfig in its data directory")
	}
	ck, err := r.Cookie(authn.SessionCookieName(r))
	if err != nil || ck.Value == "" {
		return apierrors.NewForbidden(schemaless("kubeconfig"), "", errors.New("a kubeconfig belongs to a browser sign-in: sign in at /signin and use the kubeconfig button"))
	}
	token, u, err := s.authn.MintInSignIn(r.Context(), ck.Value, authn.DefaultTokenLifetime)
	if err != nil {
		return mintError(err)
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

// mintDashboardSession mints the dashboard's browser session from the
// instructor's (or admin's) token, with refusals as Statuses.
func (s *Server) mintDashboardSession(ctx context.Context, parent string, lifetime time.Duration) (string, error) {
	token, err := s.authn.MintFrom(ctx, parent, lifetime)
	return token, mintError(err)
}

// mintError is a refused mint as a Status.
func mintError(err error) error {
	switch {
	case errors.Is(err, authn.ErrNotSignedIn):
		return apierrors.NewUnauthorized(err.Error())
	case errors.Is(err, authn.ErrMintRateLimited):
		return apierrors.NewTooManyRequests(err.Error(), int(authn.MintInterval/time.Second))
	case errors.Is(err, authn.ErrTooManyTokens):
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusConflict, Reason: metav1.StatusReasonConflict, Message: err.Error(),
		}}
	}
	return err
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
	return "https://" + net.JoinHostPort(host, s.securePort())
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
	return s.writeTraces(c, who)
}

// writeTraces answers with the latest traces of who, as many as ?limit
// asks (at most maxTraces).
func (s *Server) writeTraces(c echo.Context, who string) error {
	n, err := traceLimit(c)
	if err != nil {
		return err
	}
	traces := s.traces.Recent(who, n)
	if traces == nil {
		traces = []pipeline.Trace{}
	}
	return c.JSON(http.StatusOK, map[string]any{"user": who, "traces": traces})
}

// traceLimit is how many traces a request for them asks for: ?limit,
// at most maxTraces, which is also the default.
func traceLimit(c echo.Context) (int, error) {
	l := c.QueryParam("limit")
	if l == "" {
		return maxTraces, nil
	}
	v, err := strconv.Atoi(l)
	if err != nil || v < 1 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("limit %q: want a number from 1 to %d", l, maxTraces))
	}
	return min(v, maxTraces), nil
}

// signinLimits rate-limits sign-in per client address, remembering at most
// maxLimiters addresses in least-recently-used order.
type signinLimits struct {
	mu       sync.Mutex
	m        map[string]*list.Element // of *addrLimiter
	lru      list.List                // front: most recently used
	overflow *rate.Limiter
	now      func() time.Time
}

type addrLimiter struct {
	addr string
	lim  *rate.Limiter
}

// evictScan is how many of the least recently used limiters are looked at
// for one that can be forgotten.
const evictScan = 32

func newSigninLimits() *signinLimits {
	return &signinLimits{m: map[string]*list.Element{}, overflow: rate.NewLimiter(signinRate, signinBurst), now: time.Now}
}

// allow spends one sign-in of addr's allowance. When the table is full,
// a limiter that has refilled to its burst is forgotten (a new one would be
// the same); the table is never wiped, since that would give everyone,
// the address that just guessed its allowance away included, a fresh burst.
// If no limiter near the least recently used end is full, the address is
// one of a flood of new ones: they share one limiter until one is.
func (l *signinLimits) allow(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if e, ok := l.m[addr]; ok {
		l.lru.MoveToFront(e)
		return e.Value.(*addrLimiter).lim.AllowN(now, 1)
	}
	if len(l.m) >= maxLimiters && !l.evictFull(now) {
		return l.overflow.AllowN(now, 1)
	}
	al := &addrLimiter{addr: addr, lim: rate.NewLimiter(signinRate, signinBurst)}
	l.m[addr] = l.lru.PushFront(al)
	return al.lim.AllowN(now, 1)
}

// evictFull forgets one full limiter among the least recently used.
func (l *signinLimits) evictFull(now time.Time) bool {
	e := l.lru.Back()
	for i := 0; i < evictScan && e != nil; i, e = i+1, e.Prev() {
		al := e.Value.(*addrLimiter)
		if al.lim.TokensAt(now) >= signinBurst {
			l.lru.Remove(e)
			delete(l.m, al.addr)
			return true
		}
	}
	return false
}

// clientAddr is who a sign-in is limited as: the connection's address (a
// forwarded-for header could be set by anyone, so rate limits do not trust
// it), and for IPv6 its /64, since one host is routinely given a whole
// /64 and can pick any address in it.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is4() {
		return ip.String()
	}
	return netip.PrefixFrom(ip, 64).Masked().String()
}

func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

// pageLang is the page's language, by the site's one rule (i18n.Of).
func pageLang(c echo.Context) i18n.Lang { return i18n.Of(c.Request()) }
