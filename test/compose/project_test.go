package compose_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubelab/kubelab/internal/freeport"
)

// project is one Compose project made from the repository's
// docker-compose.yml, as an instructor runs it: its .env is .env.example
// with the placeholders replaced, and its host ports are free ones (the
// file's KUBELAB_PUBLISHED_PORT and KUBELAB_PUBLISHED_SECURE_PORT) so that
// it clashes with nothing else on the machine.
type project struct {
	name      string
	files     []string // the repository's Compose files the project runs
	envFile   string   // the project's .env
	override  string   // a Compose file that hands the containers that .env
	httpPort  string   // the host's port for kubelab's 8080
	httpsPort string   // the host's port for kubelab's 6443

	joinCode, instructorToken, graderToken string
}

// className is .env.example's class name, which the tests keep.
const className = "k8s-101"

// newProject makes a project's files and removes what an earlier run of
// the same project left behind; the test's end removes the project's
// containers, networks and volumes.
func newProject(t *testing.T, name string) *project {
	t.Helper()
	return newProjectOf(t, name, []string{"docker-compose.yml"}, "kubelab")
}

// newProjectOf is a project of the repository's Compose files, whose
// kubelab services get the project's .env.
func newProjectOf(t *testing.T, name string, files []string, kubelabs ...string) *project {
	t.Helper()
	dir := t.TempDir()
	p := &project{
		name:            "kubelabtest-" + name,
		files:           files,
		envFile:         filepath.Join(dir, ".env"),
		override:        filepath.Join(dir, "env.yml"),
		httpPort:        freePort(t),
		httpsPort:       freePort(t),
		joinCode:        "join-" + randomHex(t, 4),
		instructorToken: randomHex(t, 16),
		graderToken:     randomHex(t, 16),
	}
	example, err := os.ReadFile(filepath.Join(root, ".env.example"))
	if err != nil {
		t.Fatal(err)
	}
	env := string(example)
	for key, value := range map[string]string{
		"KUBELAB_JOIN_CODE":        p.joinCode,
		"KUBELAB_INSTRUCTOR_TOKEN": p.instructorToken,
		"KUBELAB_GRADER_TOKEN":     p.graderToken,
	} {
		line := regexp.MustCompile(`(?m)^` + key + `=.*$`)
		if !line.MatchString(env) {
			t.Fatalf(".env.example sets no %s", key)
		}
		env = line.ReplaceAllLiteralString(env, key+"="+value)
	}
	env += "\nKUBELAB_PUBLISHED_PORT=" + p.httpPort + "\nKUBELAB_PUBLISHED_SECURE_PORT=" + p.httpsPort + "\n"
	// The test's students all sign in from this host, which Docker's
	// port forwarding makes one address: students at their own machines
	// have one each.
	env += "KUBELAB_MAX_JOINS_PER_ADDRESS=0\n"
	if len(kubelabs) > 1 {
		// Replicas share one admin kubeconfig, as the overlay requires.
		env += "KUBELAB_ADMIN_TOKEN=" + randomHex(t, 16) + "\n"
	}
	if err := os.WriteFile(p.envFile, []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	// docker-compose.yml reads .env from the repository's directory; the
	// test's is elsewhere, so that it never touches an instructor's own.
	override := "services:\n"
	for _, service := range kubelabs {
		override += "  " + service + ":\n    env_file:\n      - path: " + p.envFile + "\n"
	}
	if err := os.WriteFile(p.override, []byte(override), 0o600); err != nil {
		t.Fatal(err)
	}
	p.down(t)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := p.run("logs", "--no-color", "--tail", "200")
			t.Logf("the project's last logs:\n%s", out)
		}
		p.down(t)
	})
	return p
}

// run runs docker compose on the project: the repository's file, the
// test's .env both for the file's variables and for the container.
func (p *project) run(args ...string) (string, error) {
	base := []string{"compose", "-p", p.name, "--env-file", p.envFile}
	for _, f := range append(p.composeFiles(), p.override) {
		base = append(base, "-f", f)
	}
	return run(context.Background(), nil, "docker", append(base, args...)...)
}

// composeFiles are the paths of the repository's Compose files the
// project runs.
func (p *project) composeFiles() []string {
	var paths []string
	for _, f := range p.files {
		paths = append(paths, filepath.Join(root, f))
	}
	return paths
}

// compose runs docker compose on the project; its failure ends the test.
func (p *project) compose(t *testing.T, args ...string) string {
	t.Helper()
	out, err := p.run(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// down removes the project's containers, networks and volumes.
func (p *project) down(t *testing.T) {
	t.Helper()
	if out, err := p.run("down", "--volumes", "--remove-orphans", "--timeout", "5"); err != nil {
		t.Errorf("removing project %s: %v\n%s", p.name, err, out)
	}
}

// up starts the project as the README says, waiting until every service is
// healthy (compose's --wait reads the health checks: etcd's, and the
// kubelab image's own).
func (p *project) up(t *testing.T) {
	t.Helper()
	buildKubelab(t)
	p.upAgain(t)
}

// upAgain starts what is stopped, waits until every service is healthy,
// and logs how long that took: the figure docs/PERFORMANCE.md records.
func (p *project) upAgain(t *testing.T) {
	t.Helper()
	started := time.Now()
	p.compose(t, "up", "--detach", "--wait", "--wait-timeout", "300")
	t.Logf("up --wait: healthy in %.1f s", time.Since(started).Seconds())
}

// httpURL and httpsURL are kubelab's published addresses on this host.
func (p *project) httpURL() string  { return "http://127.0.0.1:" + p.httpPort }
func (p *project) httpsURL() string { return "https://127.0.0.1:" + p.httpsPort }

var built struct {
	sync.Mutex
	done bool
}

// buildKubelab builds kubelab's image from the working tree, once per run,
// with Compose (which builds through buildx and the engine's BuildKit, as an
// instructor's `docker compose up` does).
func buildKubelab(t *testing.T) {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	if built.done {
		return
	}
	out, err := run(context.Background(), nil, "docker", "compose", "-p", "kubelabtest-build",
		"-f", filepath.Join(root, "docker-compose.yml"), "build", "kubelab")
	if err != nil {
		t.Fatal(err)
	}
	built.done = true
	t.Logf("built %s:\n%s", kubelabImage, lastLines(out, 5))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePort is a host port nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Loopback()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addr)
	return port
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
