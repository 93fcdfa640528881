package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
	line int
}

// stage is the instructions from one FROM up to the next.
type stage struct {
	from  string
	name  string
	instr []instruction
}

// parseDockerfile splits a Dockerfile into stages. It knows comments,
// continuation lines and FROM ... AS name, which is all kubelab's uses.
func parseDockerfile(t *testing.T, text string) []stage {
	t.Helper()
	var (
		stages  []stage
		pending string
		start   int
	)
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if pending == "" && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if pending != "" && strings.HasPrefix(line, "#") {
			continue // comments inside a continued instruction are dropped
		}
		if pending == "" {
			start = i + 1
		}
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			pending += rest + " "
			continue
		}
		full := strings.TrimSpace(pending + line)
		pending = ""
		cmd, args, _ := strings.Cut(full, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			s := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("Dockerfile:%d: %s before the first FROM", in.line, in.cmd)
		}
		stages[len(stages)-1].instr = append(stages[len(stages)-1].instr, in)
	}
	if pending != "" {
		t.Fatal("Dockerfile ends in a continuation line")
	}
	return stages
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.instr {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// index is the position of the first instruction cmd whose args contain sub, or -1.
func (s stage) index(cmd, sub string) int {
	return slices.IndexFunc(s.instr, func(in instruction) bool { return in.cmd == cmd && strings.Contains(in.args, sub) })
}

// execForm decodes a JSON-array (exec form) argument list, or returns nil.
func execForm(args string) []string {
	var argv []string
	if json.Unmarshal([]byte(args), &argv) != nil {
		return nil
	}
	return argv
}

// goVersion is go.mod's go directive as an image tag: "go 1.26.0" is golang:1.26.
func goVersion(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(readFile(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	return m[1]
}

// kubelabCanProbe reports whether cmd/kubelab has a subcommand that checks a
// running kubelab's /readyz, which a HEALTHCHECK in a shell-less image needs.
func kubelabCanProbe(t *testing.T) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "cmd", "kubelab", "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if regexp.MustCompile(`"(probe|healthcheck)"`).Match(data) {
			return true
		}
	}
	return false
}

func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t, readFile(t, "Dockerfile"))
	if len(stages) < 2 {
		t.Fatalf("want a multi-stage build, got %d stage(s)", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]

	t.Run("build", func(t *testing.T) {
		if want := "golang:" + goVersion(t); build.from != want {
			t.Errorf("build stage FROM %s, want %s (go.mod's Go)", build.from, want)
		}
		mods, download, all := build.index("COPY", "go.mod"), build.index("RUN", "go mod download"), build.index("COPY", ". ")
		if mods < 0 || download < mods || all < download {
			t.Errorf("want COPY go.mod go.sum, RUN go mod download, then COPY . . (modules in a layer of their own); got positions %d, %d, %d", mods, download, all)
		}
		i := build.index("RUN", "go build")
		if i < 0 {
			t.Fatal("build stage has no go build")
		}
		for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "./cmd/kubelab", "-o /out/kubelab"} {
			if !strings.Contains(build.instr[i].args, want) {
				t.Errorf("go build (line %d) lacks %q: the runtime image is distroless static", build.instr[i].line, want)
			}
		}
	})

	t.Run("runtime", func(t *testing.T) {
		if !strings.HasPrefix(final.from, "gcr.io/distroless/") || !strings.HasSuffix(final.from, ":nonroot") {
			t.Errorf("final stage FROM %s, want a distroless :nonroot image", final.from)
		}
		users := final.all("USER")
		if len(users) == 0 {
			t.Fatal("final stage sets no USER")
		}
		user, _, _ := strings.Cut(users[len(users)-1].args, ":")
		if user == "" || user == "root" || user == "0" {
			t.Errorf("final stage runs as %q, want a non-root user", user)
		}
		var exposed []string
		for _, in := range final.all("EXPOSE") {
			exposed = append(exposed, strings.Fields(in.args)...)
		}
		if !slices.Contains(exposed, "8080") && !slices.Contains(exposed, "8080/tcp") {
			t.Errorf("final stage exposes %q, want 8080", exposed)
		}
		if final.index("COPY", "/out/kubelab /kubelab") < 0 {
			t.Error("final stage does not copy the binary to /kubelab")
		}
		entry := final.all("ENTRYPOINT")
		if len(entry) == 0 || !slices.Equal(execForm(entry[len(entry)-1].args), []string{"/kubelab"}) {
			t.Errorf("want ENTRYPOINT [\"/kubelab\"] (exec form: no shell), got %v", entry)
		}
		if final.index("ENV", "KUBELAB_DATA_DIR=/data") < 0 || final.index("VOLUME", "/data") < 0 {
			t.Error("want ENV KUBELAB_DATA_DIR=/data and VOLUME /data")
		}
		if final.index("COPY", "--chown=65532:65532") < 0 {
			t.Error("want /data created owned by the nonroot user, so a fresh volume is writable")
		}
	})

	t.Run("healthcheck", func(t *testing.T) {
		hcs := final.all("HEALTHCHECK")
		compose := loadCompose(t).Services["kubelab"].Healthcheck
		canProbe := kubelabCanProbe(t)
		switch {
		case len(hcs) > 0:
			args := hcs[len(hcs)-1].args
			cmd := args[strings.Index(args, "CMD")+len("CMD"):]
			argv := execForm(strings.TrimSpace(cmd))
			if len(argv) < 2 || argv[0] != "/kubelab" || !strings.HasSuffix(argv[len(argv)-1], "/readyz") {
				t.Errorf("HEALTHCHECK %s: want exec form [\"/kubelab\", ..., \"http://127.0.0.1:8080/readyz\"]: the image has no shell or curl", args)
			}
			if !canProbe {
				t.Error("HEALTHCHECK runs /kubelab, but cmd/kubelab has no probe subcommand: it would always fail")
			}
		case compose != nil:
			// Checked by TestComposeKubelab.
		case canProbe:
			t.Error("cmd/kubelab can probe /readyz now: give the image a HEALTHCHECK that uses it")
		default:
			t.Log("no healthcheck for kubelab: cmd/kubelab has no probe subcommand yet, and the image has no shell or curl")
		}
	})
}

func TestDockerignore(t *testing.T) {
	var patterns []string
	for _, line := range strings.Split(readFile(t, ".dockerignore"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		patterns = append(patterns, strings.Trim(line, "/"))
	}
	// bin/ holds kubectl and etcdctl (hundreds of MB), kubelab-data/ a local
	// etcd, .env the class's settings: none belongs in the build context.
	for _, want := range []string{"bin", "kubelab-data", ".git", ".env", "*.test"} {
		if !slices.Contains(patterns, want) {
			t.Errorf(".dockerignore does not exclude %s", want)
		}
	}
	for _, p := range patterns {
		if strings.HasPrefix(p, "!") {
			continue
		}
		for _, needed := range []string{"go.mod", "go.sum", "cmd", "server", "storage"} {
			if ok, _ := filepath.Match(p, needed); ok {
				t.Errorf(".dockerignore pattern %q excludes %s, which the build needs", p, needed)
			}
		}
	}
}
