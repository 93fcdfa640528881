// Package deploy checks the files that ship kubelab (docker-compose.yml, the
// Dockerfile, .dockerignore, .env.example) by parsing them: in a second, and
// on a machine with no Docker engine. test/compose builds and runs them.
package deploy

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"sigs.k8s.io/yaml"

	"github.com/kubelab/kubelab/server"
)

// root is the repository root, relative to this package's directory, where
// go test runs it.
var root = filepath.Join("..", "..")

// composeFile is the part of the Compose specification kubelab's file uses.
type composeFile struct {
	Name     string                     `json:"name"`
	Services map[string]composeService  `json:"services"`
	Volumes  map[string]*map[string]any `json:"volumes"`
}

type composeService struct {
	Image       string                  `json:"image"`
	Build       any                     `json:"build"`
	Restart     string                  `json:"restart"`
	StopGrace   string                  `json:"stop_grace_period"`
	Command     []string                `json:"command"`
	Ports       []string                `json:"ports"`
	Volumes     []string                `json:"volumes"`
	EnvFile     any                     `json:"env_file"`
	Healthcheck *composeHealthcheck     `json:"healthcheck"`
	DependsOn   map[string]composeDepOn `json:"depends_on"`
}

type composeHealthcheck struct {
	Test []string `json:"test"`
}

type composeDepOn struct {
	Condition string `json:"condition"`
}

// etcdMember is an etcd service's command line, parsed by etcd's own flags.
type etcdMember struct {
	service string
	flags   map[string]string
	volume  string // the named volume mounted in the member
	target  string // where it is mounted
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	var c composeFile
	if err := yaml.Unmarshal([]byte(readFile(t, "docker-compose.yml")), &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c
}

// etcdVersion is the etcd server module kubelab is built and tested with,
// from go.mod (a test binary carries no module versions).
func etcdVersion(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*go\.etcd\.io/etcd/server/v3 (v\S+)`).FindStringSubmatch(readFile(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod does not require go.etcd.io/etcd/server/v3")
	}
	return m[1]
}

// etcdServices parses the command of every service that runs the etcd image.
func etcdServices(t *testing.T, c composeFile) []etcdMember {
	t.Helper()
	var members []etcdMember
	for name, s := range c.Services {
		if !strings.Contains(s.Image, "etcd") {
			continue
		}
		members = append(members, etcdMember{service: name, flags: parseEtcdFlags(t, name, s.Command)})
		m := &members[len(members)-1]
		if len(s.Volumes) != 1 {
			t.Errorf("%s: want one volume for its data, got %q", name, s.Volumes)
			continue
		}
		src, dst, _ := strings.Cut(s.Volumes[0], ":")
		m.volume, m.target = src, strings.Split(dst, ":")[0]
	}
	sort.Slice(members, func(i, j int) bool { return members[i].service < members[j].service })
	return members
}

// parseEtcdFlags parses an etcd command line with the flags etcd itself
// defines (embed.Config's, plus the few etcdmain adds), so a flag that etcd at
// go.mod's version does not know fails here rather than in a classroom.
func parseEtcdFlags(t *testing.T, service string, command []string) map[string]string {
	t.Helper()
	if len(command) == 0 || filepath.Base(command[0]) != "etcd" {
		t.Fatalf("%s: command must start with the etcd binary, got %q", service, command)
	}
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	embed.NewConfig().AddFlags(fs)
	fs.String("initial-cluster-state", "new", "")
	if err := fs.Parse(command[1:]); err != nil {
		t.Fatalf("%s: etcd %s rejects its command line: %v", service, etcdVersion(t), err)
	}
	if fs.NArg() > 0 {
		t.Fatalf("%s: unexpected arguments %q", service, fs.Args())
	}
	got := map[string]string{}
	fs.Visit(func(f *flag.Flag) { got[f.Name] = f.Value.String() })
	return got
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" {
		t.Errorf("%q is not an http URL", raw)
		return ""
	}
	return u.Hostname()
}

func TestComposeEtcdCluster(t *testing.T) {
	c := loadCompose(t)
	members := etcdServices(t, c)
	if len(members) != 3 {
		t.Fatalf("want 3 etcd services, got %d", len(members))
	}
	wantImage := "gcr.io/etcd-development/etcd:" + etcdVersion(t)
	volumes := map[string]string{}
	var clusters, tokens []string
	for _, m := range members {
		s := c.Services[m.service]
		if s.Image != wantImage {
			t.Errorf("%s: image %q, want %q (the etcd kubelab is built and tested with)", m.service, s.Image, wantImage)
		}
		f := m.flags
		if f["name"] != m.service {
			t.Errorf("%s: --name=%q, want the service's name", m.service, f["name"])
		}
		if other, dup := volumes[m.volume]; dup {
			t.Errorf("%s and %s share the volume %q", other, m.service, m.volume)
		}
		volumes[m.volume] = m.service
		if dir := f["data-dir"]; dir != m.target && !strings.HasPrefix(dir, m.target+"/") {
			t.Errorf("%s: --data-dir=%q is not on its volume, mounted at %q", m.service, dir, m.target)
		}
		for _, name := range []string{"initial-advertise-peer-urls", "advertise-client-urls"} {
			if h := hostOf(t, f[name]); h != m.service {
				t.Errorf("%s: --%s=%q: want the service's own name as host", m.service, name, f[name])
			}
		}
		for _, name := range []string{"listen-peer-urls", "listen-client-urls"} {
			if h := hostOf(t, f[name]); h != "0.0.0.0" {
				t.Errorf("%s: --%s=%q: want 0.0.0.0, so the other containers can reach it", m.service, name, f[name])
			}
		}
		if f["initial-cluster-state"] != "new" {
			t.Errorf("%s: --initial-cluster-state=%q, want new", m.service, f["initial-cluster-state"])
		}
		if d, err := time.ParseDuration(f["watch-progress-notify-interval"]); err != nil || d != 5*time.Second {
			t.Errorf("%s: --watch-progress-notify-interval=%q, want 5s as kube-apiserver's etcd", m.service, f["watch-progress-notify-interval"])
		}
		clusters = append(clusters, f["initial-cluster"])
		tokens = append(tokens, f["initial-cluster-token"])
		checkExecHealthcheck(t, m.service, s.Healthcheck, "etcdctl", "endpoint", "health")
		if s.Restart != "unless-stopped" {
			t.Errorf("%s: restart %q, want unless-stopped", m.service, s.Restart)
		}
	}
	if tokens[0] == "" || len(slices.Compact(slices.Clone(tokens))) != 1 {
		t.Errorf("--initial-cluster-token differs or is empty: %q", tokens)
	}
	if len(slices.Compact(slices.Clone(clusters))) != 1 {
		t.Fatalf("--initial-cluster differs between members: %q", clusters)
	}
	// --initial-cluster names every member at the peer URL it advertises.
	var want []string
	for _, m := range members {
		want = append(want, m.service+"="+m.flags["initial-advertise-peer-urls"])
	}
	got := strings.Split(clusters[0], ",")
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("--initial-cluster=%q, want the members %q", clusters[0], want)
	}
}

// checkExecHealthcheck checks a health check is exec form ("CMD", not
// "CMD-SHELL"): neither the etcd image nor kubelab's has a shell.
func checkExecHealthcheck(t *testing.T, service string, hc *composeHealthcheck, want ...string) {
	t.Helper()
	if hc == nil || len(hc.Test) < 2 {
		t.Errorf("%s: no healthcheck", service)
		return
	}
	if hc.Test[0] != "CMD" {
		t.Errorf("%s: healthcheck %q: want exec form [\"CMD\", ...], the image has no shell", service, hc.Test)
		return
	}
	if !filepath.IsAbs(hc.Test[1]) || filepath.Base(hc.Test[1]) != want[0] {
		t.Errorf("%s: healthcheck runs %q, want the absolute path of %s", service, hc.Test[1], want[0])
	}
	for _, w := range want[1:] {
		if !slices.Contains(hc.Test, w) {
			t.Errorf("%s: healthcheck %q does not run %q", service, hc.Test, w)
		}
	}
}

// kubelabFlags returns the flags cmd/kubelab defines, read from its source.
func kubelabFlags(t *testing.T) map[string]bool {
	t.Helper()
	src := readFile(t, "cmd/kubelab/main.go")
	re := regexp.MustCompile(`fs\.(?:String|Duration|Bool|Int|Uint)(?:Var)?\((?:[^,]+,\s*)?"([a-z0-9-]+)"`)
	flags := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(src, -1) {
		flags[m[1]] = true
	}
	if !flags["etcd-endpoints"] || !flags["listen"] {
		t.Fatalf("could not read kubelab's flags from cmd/kubelab/main.go (found %v)", flags)
	}
	return flags
}

func TestComposeKubelab(t *testing.T) {
	c := loadCompose(t)
	s, ok := c.Services["kubelab"]
	if !ok {
		t.Fatal("no kubelab service")
	}
	if s.Build == nil {
		t.Error("kubelab: not built from the Dockerfile")
	}
	known := kubelabFlags(t)
	flags := map[string]string{}
	for _, arg := range s.Command {
		name, value, ok := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if !strings.HasPrefix(arg, "--") || !ok {
			t.Errorf("kubelab: argument %q: want --flag=value", arg)
			continue
		}
		if !known[name] {
			t.Errorf("kubelab: --%s is not one of kubelab's flags", name)
		}
		flags[name] = value
	}

	members := etcdServices(t, c)
	var want []string
	for _, m := range members {
		want = append(want, m.flags["advertise-client-urls"])
	}
	got := strings.Split(flags["etcd-endpoints"], ",")
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("kubelab: --etcd-endpoints=%q, want every member's client URL %q", flags["etcd-endpoints"], want)
	}
	for _, m := range members {
		if d, ok := s.DependsOn[m.service]; !ok || d.Condition != "service_healthy" {
			t.Errorf("kubelab: depends_on %s: %+v, want condition service_healthy", m.service, d)
		}
	}

	cfg := server.DefaultConfig()
	cfg.Listen = flags["listen"]
	cfg.Classroom = flags["classroom"] == "true"
	cfg.DataDir = flags["data-dir"]
	cfg.EtcdListenClient = ""
	cfg.EtcdEndpoints = got
	if err := cfg.Validate(); err != nil {
		t.Errorf("kubelab: its flags do not make a valid configuration: %v", err)
	}
	if cfg.Listen != ":8080" {
		t.Errorf("kubelab: --listen=%q, want :8080 (every interface of the container, the port the image exposes)", cfg.Listen)
	}
	// The host's ports may be moved in .env; kubelab is told the HTTPS
	// one, which its kubeconfigs and redirects name.
	if !slices.Contains(s.Ports, "${KUBELAB_PUBLISHED_PORT:-8080}:8080") || !slices.Contains(s.Ports, "${KUBELAB_PUBLISHED_SECURE_PORT:-6443}:6443") {
		t.Errorf("kubelab: ports %q, want 8080 and 6443, published where .env says", s.Ports)
	}
	if flags["published-secure-port"] != "${KUBELAB_PUBLISHED_SECURE_PORT:-6443}" {
		t.Errorf("kubelab: --published-secure-port=%q, want the port 6443 is published at", flags["published-secure-port"])
	}
	if s.Restart != "unless-stopped" {
		t.Errorf("kubelab: restart %q, want unless-stopped", s.Restart)
	}
	// Docker kills a container 10s after SIGTERM unless told otherwise:
	// kubelab needs its shutdown timeout and some more.
	if grace, err := time.ParseDuration(s.StopGrace); err != nil || grace <= server.DefaultConfig().ShutdownTimeout {
		t.Errorf("kubelab: stop_grace_period %q, want more than kubelab's shutdown timeout %s", s.StopGrace, server.DefaultConfig().ShutdownTimeout)
	}
	if !strings.Contains(fmt.Sprint(s.EnvFile), ".env") {
		t.Errorf("kubelab: env_file %v, want .env", s.EnvFile)
	}
	if len(s.Volumes) != 1 || !strings.HasSuffix(s.Volumes[0], ":"+cfg.DataDir) {
		t.Errorf("kubelab: volumes %q, want one named volume on --data-dir %q", s.Volumes, cfg.DataDir)
	}
	if s.Healthcheck != nil {
		checkExecHealthcheck(t, "kubelab", s.Healthcheck, "kubelab")
	}
}

// TestComposeVolumes checks every named volume a service mounts is declared,
// and every declared one is used.
func TestComposeVolumes(t *testing.T) {
	c := loadCompose(t)
	used := map[string]bool{}
	for name, s := range c.Services {
		for _, v := range s.Volumes {
			src, _, ok := strings.Cut(v, ":")
			if !ok || strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/") || strings.HasPrefix(src, "~") {
				t.Errorf("%s: volume %q is not a named volume", name, v)
				continue
			}
			used[src] = true
			if _, declared := c.Volumes[src]; !declared {
				t.Errorf("%s: volume %q is not declared under volumes:", name, src)
			}
		}
	}
	for v := range c.Volumes {
		if !used[v] {
			t.Errorf("volume %q is declared but no service uses it", v)
		}
	}
	// The restore steps in README.md name the volumes <project>_<volume>.
	if c.Name != "kubelab" {
		t.Errorf("name %q, want kubelab: README.md's restore steps use the volume names kubelab_<volume>", c.Name)
	}
}

func TestEnvExample(t *testing.T) {
	known := kubelabFlags(t)
	set := map[string]string{}
	for i, line := range strings.Split(readFile(t, ".env.example"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			t.Errorf(".env.example:%d: %q is not NAME=value", i+1, line)
			continue
		}
		flagName := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, "KUBELAB_")), "_", "-")
		if !strings.HasPrefix(name, "KUBELAB_") || !known[flagName] {
			t.Errorf(".env.example:%d: %s sets no kubelab flag", i+1, name)
		}
		set[name] = value
	}
	for _, name := range []string{"KUBELAB_LOG_LEVEL", "KUBELAB_COMPACTION_INTERVAL", "KUBELAB_JOIN_CODE", "KUBELAB_INSTRUCTOR_TOKEN", "KUBELAB_GRADER_TOKEN"} {
		if _, ok := set[name]; !ok {
			t.Errorf(".env.example does not document %s", name)
		}
	}
	cfg := server.DefaultConfig()
	cfg.LogLevel = set["KUBELAB_LOG_LEVEL"]
	d, err := time.ParseDuration(set["KUBELAB_COMPACTION_INTERVAL"])
	if err != nil {
		t.Errorf("KUBELAB_COMPACTION_INTERVAL: %v", err)
	}
	cfg.CompactionInterval = d
	// docker-compose.yml runs a class. A copied but unedited file must stop
	// it, saying what to change, rather than run a class with the example's
	// join code and tokens.
	cfg.Classroom, cfg.JoinCode = true, set["KUBELAB_JOIN_CODE"]
	cfg.InstructorToken, cfg.GraderToken = set["KUBELAB_INSTRUCTOR_TOKEN"], set["KUBELAB_GRADER_TOKEN"]
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), ".env.example") {
		t.Errorf(".env.example's values unedited: %v, want an error naming the placeholder", err)
	}
	cfg.JoinCode = "k8s-101-room-4"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "openssl rand -hex 16") {
		t.Errorf(".env.example's tokens unedited: %v, want an error saying how to make one", err)
	}
	cfg.InstructorToken, cfg.GraderToken = "3f9c1a7be04d5e2c8a61f0b7d93e4c25", "b7e2d90c4f1a36e8d5c7a0f2b9e41d63"
	if err := cfg.Validate(); err != nil {
		t.Errorf(".env.example edited as it says: %v", err)
	}
}

// TestReadmeNamesRealServices checks the docker compose commands in README.md
// name services and volumes that docker-compose.yml has.
func TestReadmeNamesRealServices(t *testing.T) {
	c := loadCompose(t)
	readme := readFile(t, "README.md")
	cmds := regexp.MustCompile(`docker compose (?:exec|cp|run|stop|start|restart|logs)\b[^\n]*`).FindAllString(readme, -1)
	if len(cmds) == 0 {
		t.Fatal("README.md has no docker compose commands")
	}
	service := regexp.MustCompile(`(?:^|\s)(etcd-\$?\w+|kubelab)(?::|\s|$)`)
	for _, cmd := range cmds {
		for _, m := range service.FindAllStringSubmatch(cmd, -1) {
			name := m[1]
			if strings.Contains(name, "$") {
				continue // a shell loop over the members
			}
			if _, ok := c.Services[name]; !ok {
				t.Errorf("README.md: %q names no service %q", cmd, name)
			}
		}
	}
	for _, m := range regexp.MustCompile(`(?:^|[^\w-])kubelab_([\w-]+)`).FindAllStringSubmatch(readme, -1) {
		if strings.Contains(m[1], "_") {
			continue // a metric name (kubelab_watchers_stalled_total), not a volume
		}
		if _, ok := c.Volumes[m[1]]; !ok {
			t.Errorf("README.md: volume kubelab_%s is not declared in docker-compose.yml", m[1])
		}
	}
}
