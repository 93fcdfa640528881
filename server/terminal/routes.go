package terminal

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kubelab/kubelab/web"
	"github.com/kubelab/kubelab/web/i18n"
)

// WebsocketPath is the terminal's websocket.
const WebsocketPath = "/ui/ws/terminal"

// Install serves the terminal's page and websocket on e. The page itself
// is behind the front door like every page: in classroom mode a browser
// that has not signed in is sent to sign in first.
func Install(e *echo.Echo, cfg Config) *Terminal {
	t := New(cfg)
	e.GET("/terminal", web.SecureHeaders(t.page))
	e.GET(WebsocketPath, web.SecureHeaders(t.ServeWS))
	return t
}

func (t *Terminal) page(c echo.Context) error {
	lang := i18n.Of(c.Request())
	info := web.TerminalInfo{Lang: lang, Classroom: t.cfg.Classroom, Kubeconfig: t.cfg.Kubeconfig}
	m := web.Meta{Title: web.T(lang, "term.title"), Lang: lang, Section: "terminal"}
	return web.Render(c, http.StatusOK, web.PageWith(m, web.TerminalView(info)))
}
