package web

import (
	"bytes"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
)

// Render writes page, a whole HTML page, with the given status: the one way
// kubelab's handlers answer with a page. The page is rendered into memory
// first, so that a template that fails half-way sends no half page under a
// success status (the caller's error handler answers instead). Pages are
// never stored by browsers or proxies: they carry the reader's name,
// namespace, progress or scores, and a shared classroom computer must not
// show the last student's page from its cache.
func Render(c echo.Context, status int, page templ.Component) error {
	var buf bytes.Buffer
	if err := page.Render(c.Request().Context(), &buf); err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.HTMLBlob(status, buf.Bytes())
}
