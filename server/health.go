package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"
)

// healthCheck is one named check of /healthz, /livez or /readyz.
type healthCheck struct {
	name  string
	check func(ctx context.Context) error
}

// installHealth serves /healthz, /livez and /readyz the way kube-apiserver
// does, so `kubectl get --raw '/readyz?verbose'` reads the same.
func (s *Server) installHealth() {
	ping := healthCheck{"ping", func(context.Context) error { return nil }}
	etcd := healthCheck{"etcd", s.checkEtcd}
	shutdown := healthCheck{"shutdown", s.checkShutdown}
	s.installHealthEndpoint("healthz", ping, etcd)
	s.installHealthEndpoint("livez", ping, etcd)
	s.installHealthEndpoint("readyz", ping, etcd, shutdown)
}

func (s *Server) checkEtcd(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, etcdHealthTimeout)
	defer cancel()
	return s.etcd.Ready(ctx)
}

func (s *Server) checkShutdown(context.Context) error {
	if s.shuttingDown.Load() {
		return errors.New("process is shutting down")
	}
	return nil
}

var healthMethods = []string{http.MethodGet, http.MethodHead}

func (s *Server) installHealthEndpoint(name string, checks ...healthCheck) {
	s.echo.Match(healthMethods, "/"+name, s.healthHandler(name, checks))
	for _, c := range checks {
		s.echo.Match(healthMethods, "/"+name+"/"+c.name, s.singleCheckHandler(name, c))
	}
}

// healthHandler runs every check in order. Like kube-apiserver it answers a
// bare "ok" on success, lists the checks when ?verbose is given or a check
// failed, withholds failure reasons from the response (they are logged), and
// skips checks named in ?exclude.
func (s *Server) healthHandler(name string, checks []healthCheck) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		excluded := map[string]bool{}
		for _, e := range r.URL.Query()["exclude"] {
			excluded[e] = true
		}
		var out, reasons bytes.Buffer
		failed := false
		for _, hc := range checks {
			if excluded[hc.name] {
				delete(excluded, hc.name)
				fmt.Fprintf(&out, "[+]%s excluded: ok\n", hc.name)
				continue
			}
			if err := hc.check(r.Context()); err != nil {
				failed = true
				fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", hc.name)
				fmt.Fprintf(&reasons, "[-]%s failed: %v\n", hc.name, err)
				continue
			}
			fmt.Fprintf(&out, "[+]%s ok\n", hc.name)
		}
		if len(excluded) > 0 {
			var unknown []string
			for e := range excluded {
				unknown = append(unknown, e)
			}
			sort.Strings(unknown)
			fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(unknown, ","))
		}
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		if failed {
			s.log.LogAttrs(r.Context(), slog.LevelWarn, name+" check failed", slog.String("checks", reasons.String()))
			return c.String(http.StatusInternalServerError, out.String()+name+" check failed\n")
		}
		if _, verbose := r.URL.Query()["verbose"]; !verbose {
			return c.String(http.StatusOK, "ok")
		}
		return c.String(http.StatusOK, out.String()+name+" check passed\n")
	}
}

// singleCheckHandler serves /<endpoint>/<check>; like kube-apiserver it does
// show the reason of a failure.
func (s *Server) singleCheckHandler(name string, hc healthCheck) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("X-Content-Type-Options", "nosniff")
		if err := hc.check(c.Request().Context()); err != nil {
			s.log.Warn(name+" check failed", "check", hc.name, "error", err)
			return c.String(http.StatusInternalServerError, fmt.Sprintf("internal server error: %v\n", err))
		}
		return c.String(http.StatusOK, "ok")
	}
}
