package server

import (
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// pagePrefixes are the paths of kubelab's pages and their assets: HTML,
// CSS and JavaScript that shrink to a fraction gzipped, fetched by
// browsers that all accept it. The API is left as kube-apiserver serves
// it (watches stream, and clients negotiate their own encodings), and so
// are websockets.
var pagePrefixes = []string{"/static/", "/lesson", "/lab", "/quiz", "/signin", "/terminal"}

// compressPages gzips pages and assets for clients that accept it.
func compressPages() echo.MiddlewareFunc {
	return middleware.GzipWithConfig(middleware.GzipConfig{
		// Small answers (a redirect, a 304) cost more to compress than they save.
		MinLength: 1024,
		Skipper: func(c echo.Context) bool {
			r := c.Request()
			if r.Header.Get("Upgrade") != "" {
				return true
			}
			p := r.URL.Path
			if p == "/" {
				return false
			}
			for _, prefix := range pagePrefixes {
				if strings.HasPrefix(p, prefix) {
					return false
				}
			}
			return true
		},
	})
}
