package server

import (
	"github.com/labstack/echo/v4"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelab/kubelab/web"
)

// renderSignin draws the sign-in page in the site's layout.
func renderSignin(c echo.Context, code int, v signinView) error {
	return web.Render(c, code, web.Page(v.t("title"), v.Lang, signinForm(v)))
}

// schemaless names a kubelab endpoint in a Status, which wants a resource.
func schemaless(name string) schema.GroupResource { return schema.GroupResource{Resource: name} }
