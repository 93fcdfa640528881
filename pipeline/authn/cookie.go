package authn

import (
	"net/http"
	"time"
)

// SessionCookie is the browser session's cookie on plain HTTP (local mode,
// or the instructor's own machine): it holds a token minted like any
// other, so a student's browser and kubectl are one identity.
const SessionCookie = "kubelab_session"

// SecureSessionCookie is the session cookie over HTTPS. The __Host- prefix
// makes browsers keep it only if it is Secure, for this host alone, on
// Path=/: a page on another subdomain cannot set it, and a machine on the
// classroom network that answers a plain-HTTP request cannot plant one
// (session fixation), since a plain-HTTP answer cannot set a Secure cookie.
const SecureSessionCookie = "__Host-kubelab_session"

// SessionCookieName is the session cookie a request may carry: the
// __Host- one over TLS and only it, so a cookie set over plain HTTP is
// never taken for a session on the HTTPS listener.
func SessionCookieName(r *http.Request) string {
	if r.TLS != nil {
		return SecureSessionCookie
	}
	return SessionCookie
}

// NewSessionCookie is the cookie that holds token as r's browser session
// for lifetime; a zero token and lifetime clear it. HttpOnly keeps it from
// scripts, SameSite=Lax from most cross-site requests, Secure over TLS.
func NewSessionCookie(r *http.Request, token string, lifetime time.Duration) *http.Cookie {
	maxAge := int(lifetime / time.Second)
	if token == "" {
		maxAge = -1
	}
	return &http.Cookie{
		Name: SessionCookieName(r), Value: token, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil,
	}
}
