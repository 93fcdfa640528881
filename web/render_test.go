package web_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kubelab/kubelab/web"
)

func TestRenderWritesAWholePageOrNothing(t *testing.T) {
	e := echo.New()
	rec := httptest.NewRecorder()
	c := e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), rec)
	page := templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := io.WriteString(w, "<!doctype html><p>hello</p>")
		return err
	})
	if err := web.Render(c, http.StatusTeapot, page); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusTeapot || rec.Body.String() != "<!doctype html><p>hello</p>" ||
		rec.Header().Get("Content-Type") != echo.MIMETextHTMLCharsetUTF8 || rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("got %d %q %v", rec.Code, rec.Body, rec.Header())
	}

	// A template that fails half-way: no status, no half page; the error
	// goes to the caller's error handler.
	rec = httptest.NewRecorder()
	c = e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), rec)
	broken := errors.New("broken template")
	half := templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		io.WriteString(w, "<!doctype html><p>half")
		return broken
	})
	if err := web.Render(c, http.StatusOK, half); !errors.Is(err, broken) {
		t.Fatalf("error %v, want %v", err, broken)
	}
	if c.Response().Committed || rec.Body.Len() != 0 {
		t.Fatalf("a failed render wrote %q", rec.Body)
	}
}
