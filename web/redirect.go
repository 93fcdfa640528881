package web

import (
	"net/url"
	"strings"
)

// LocalPath keeps a redirect on this site: target if it is a path of
// this site, else "/". A redirect to whatever a link or a form names would
// let any page send a reader, through kubelab, to a look-alike of another
// site: no scheme or host, no "//" (another host to a browser), and no
// backslash (which browsers read as a slash).
func LocalPath(target string) string {
	u, err := url.Parse(target)
	if err != nil || target == "" || u.IsAbs() || u.Host != "" || !strings.HasPrefix(target, "/") || strings.HasPrefix(target, "//") || strings.Contains(target, "\\") {
		return "/"
	}
	return target
}
