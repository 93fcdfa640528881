package compose_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestImage checks what the Dockerfile promises of kubelab's image, built
// from the repository as Compose builds it: it runs as distroless's nonroot
// user, it has no shell, and its health check is kubelab probing its own
// /readyz (TestClass sees it turn healthy). Its size is logged: the figure
// docs/PERFORMANCE.md records.
func TestImage(t *testing.T) {
	buildKubelab(t)
	var inspect []struct {
		Size   int64
		Config struct {
			User        string
			Entrypoint  []string
			Healthcheck struct{ Test []string }
		}
	}
	if err := json.Unmarshal([]byte(docker(t, "image", "inspect", kubelabImage)), &inspect); err != nil || len(inspect) != 1 {
		t.Fatalf("docker image inspect %s: %v", kubelabImage, err)
	}
	img := inspect[0]
	if img.Config.User != "65532:65532" {
		t.Errorf("the image runs as %q, want 65532:65532 (distroless's nonroot)", img.Config.User)
	}
	if got := strings.Join(img.Config.Healthcheck.Test, " "); got != "CMD /kubelab probe http://127.0.0.1:8080/readyz" {
		t.Errorf("the image's health check is %q", got)
	}
	for _, shell := range []string{"/bin/sh", "/bin/bash", "/busybox/sh"} {
		out, err := run(t.Context(), nil, "docker", "run", "--rm", "--entrypoint", shell, kubelabImage, "-c", "true")
		if err == nil {
			t.Errorf("the image has a shell at %s", shell)
		} else if !strings.Contains(out, "no such file or directory") {
			t.Errorf("running %s in the image failed, but not for want of it: %s", shell, out)
		}
	}
	t.Logf("%s: %.1f MB", kubelabImage, float64(img.Size)/1e6)
}
