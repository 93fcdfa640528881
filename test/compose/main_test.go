// Package compose runs the class as instructors run it: the repository's own
// Dockerfile and docker-compose.yml, built and started with Docker Compose on
// the machine's Docker engine, and used through the published ports by real
// clients (HTTPS sign-ins, the real kubectl, the grader's endpoints).
//
// The engine reaches no registry, so the base images the files name are
// local stand-ins tagged with those names (test/compose/standins.sh, which
// says what each replaces); the Compose and buildx plugins are the versions
// tools/build-docker.sh builds into bin/docker/cli-plugins. `.ci/run` makes
// both before the tests.
//
// Each test runs a Compose project of its own (-p kubelabtest-NAME) on free
// ports, and removes its containers, networks and volumes when it ends: the
// engine outlives the run, and CI runs on the same one. The tests run side
// by side (.ci/run allows two at once): each mostly waits on containers.
package compose_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// root is the repository root: go test runs a package in its directory.
var root = func() string {
	abs, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return abs
}()

// dockerConfig holds the CLI plugins tools/build-docker.sh builds; the
// docker CLI finds them under $DOCKER_CONFIG/cli-plugins.
var dockerConfig = filepath.Join(root, "bin", "docker")

// baseImages are the images the Dockerfile and docker-compose.yml name.
var baseImages = []string{
	"golang:1.26",
	"gcr.io/distroless/static-debian12:nonroot",
	"gcr.io/etcd-development/etcd:v3.7.3",
	"haproxy:2.6",
}

// kubelabImage is the image docker-compose.yml builds and runs.
const kubelabImage = "kubelab:latest"

// commandTimeout bounds one docker command: an image build on a cold
// machine downloads every module and compiles kubelab.
const commandTimeout = 20 * time.Minute

func TestMain(m *testing.M) {
	if why := unusable(); why != "" {
		if os.Getenv("CI") == "true" {
			fmt.Fprintf(os.Stderr, "FAIL: the compose suite cannot run: %s\n", why)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "skipping the compose suite: %s\n", why)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// unusable says why this machine cannot run the suite, or "".
func unusable() string {
	if _, err := run(context.Background(), nil, "docker", "version", "-f", "{{.Server.Version}}"); err != nil {
		return "no Docker engine answers (" + err.Error() + ")"
	}
	for _, plugin := range []string{"docker-compose", "docker-buildx"} {
		if _, err := os.Stat(filepath.Join(dockerConfig, "cli-plugins", plugin)); err != nil {
			return "no " + plugin + " plugin in bin/docker/cli-plugins: run bash tools/build-docker.sh"
		}
	}
	for _, image := range baseImages {
		if _, err := run(context.Background(), nil, "docker", "image", "inspect", "-f", "{{.Id}}", image); err != nil {
			return "no image " + image + ": run bash test/compose/standins.sh (or pull it, with a registry)"
		}
	}
	return ""
}

// run runs a command with the suite's docker configuration and env added,
// and answers its combined output; a failure's error carries that output.
func run(ctx context.Context, env []string, name string, args ...string) (string, error) {
	return runIn(ctx, root, env, name, args...)
}

// runIn is run in another working directory.
func runIn(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "DOCKER_CONFIG="+dockerConfig), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// docker runs the docker CLI; its failure ends the test.
func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := run(context.Background(), nil, "docker", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
