package server

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

//go:embed signin.css
var signinCSS []byte

func renderSignin(c echo.Context, code int, v signinView) error {
	c.Response().Header().Set("Content-Type", "text/html; charset=utf-8")
	c.Response().WriteHeader(code)
	return signinPage(v).Render(c.Request().Context(), c.Response())
}

func serveSigninCSS(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "public, max-age=3600")
	return c.Blob(http.StatusOK, "text/css; charset=utf-8", signinCSS)
}

// schemaless names a kubelab endpoint in a Status, which wants a resource.
func schemaless(name string) schema.GroupResource { return schema.GroupResource{Resource: name} }
