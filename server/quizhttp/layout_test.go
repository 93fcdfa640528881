package quizhttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/server/quizhttp"
	"github.com/kubelab/kubelab/storage/storagetest"
	"github.com/kubelab/kubelab/web/i18n"
)

// TestSiteLayout: the site's layout, given at install time, wraps every
// page, with the page's title and language.
func TestSiteLayout(t *testing.T) {
	t.Parallel()
	e := echo.New()
	site := func(title string, lang i18n.Lang, body templ.Component) templ.Component {
		return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
			fmt.Fprintf(w, `<html data-site="kubelab" lang=%q><title>%s</title>`, lang, templ.EscapeString(title))
			if err := body.Render(ctx, w); err != nil {
				return err
			}
			_, err := io.WriteString(w, "</html>")
			return err
		})
	}
	err := quizhttp.Install(e, quizhttp.Config{Client: storagetest.StartEtcd(t).Client(), Layout: site})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	defer srv.Close()
	q, _ := quiz.Lesson().Quiz(quiz.SpotTheBugQuizID)
	for path, want := range map[string]string{
		"/quiz/" + quiz.SpotTheBugQuizID + "?lang=th": `<html data-site="kubelab" lang="th"><title>` + q.Title.TH + `</title>`,
		"/quiz/nope":    `<html data-site="kubelab" lang="en"><title>Not found</title>`,
		"/quiz?lang=en": `<html data-site="kubelab" lang="en">`,
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasPrefix(string(b), want) || !strings.HasSuffix(string(b), "</html>") || strings.Contains(string(b), "<style>") {
			t.Errorf("%s: not in the site's layout: %.300s", path, b)
		}
	}
}

func TestInstallNeedsStorage(t *testing.T) {
	t.Parallel()
	if err := quizhttp.Install(echo.New(), quizhttp.Config{}); err == nil {
		t.Error("installed with nowhere to keep attempts")
	}
}
