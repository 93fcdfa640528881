package web

import "testing"

func TestLocalPath(t *testing.T) {
	for target, want := range map[string]string{
		"/lesson/watch?lang=th#x": "/lesson/watch?lang=th#x",
		"/labs":                   "/labs",
		"":                        "/",
		"lesson":                  "/",
		"//cats.example/x":        "/",
		`/\cats.example/x`:        "/",
		`\\cats.example`:          "/",
		"https://cats.example/":   "/",
		"javascript:alert(1)":     "/",
		"/%zz":                    "/",
	} {
		if got := LocalPath(target); got != want {
			t.Errorf("LocalPath(%q) = %q, want %q", target, got, want)
		}
	}
}
