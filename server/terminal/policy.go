package terminal

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The terminal's rules (docs/SECURITY.md, "The terminal"): kubectl runs in
// the server's process, so it must not reach what the server can and the
// student cannot: the server's files, other servers, other programs, the
// server's own credentials. Two layers enforce them. checkLine refuses,
// before kubectl sees the line, what a student is likely to try, with a
// message that says why and what to do instead; checkFlags then checks,
// after kubectl's own flag parser has read the line, every flag that
// names a file, a directory or another program, so that spelling a flag
// some other way gets past neither.

// deniedCommands are kubectl commands the terminal has no place for,
// each with its message. None is in the command tree either.
var deniedCommands = map[string]string{
	"edit":         "cmd.edit",
	"exec":         "cmd.exec",
	"attach":       "cmd.exec",
	"port-forward": "cmd.portforward",
	"proxy":        "cmd.portforward",
	"cp":           "cmd.cp",
	"debug":        "cmd.exec",
	"plugin":       "cmd.plugin",
	"config":       "cmd.config",
	"kustomize":    "flag.kustomize",
	"diff":         "cmd.diff",
	"wait":         "cmd.wait",
	"logs":         "cmd.logs",
	"alpha":        "cmd.plugin",
	"completion":   "cmd.completion",
}

// deniedSubcommands are subcommands of allowed commands that are not.
var deniedSubcommands = map[[2]string]string{
	{"rollout", "status"}:          "cmd.wait",
	{"apply", "edit-last-applied"}: "cmd.edit",
}

// deniedGlobalFlags are kubectl's global flags that would choose another
// server, other credentials or files of the server; the terminal defines
// none of them, and names them here to say why.
var deniedGlobalFlags = map[string]string{
	"server": "flag.server", "s": "flag.server", "proxy-url": "flag.server",
	"kubeconfig": "flag.kubeconfig", "kuberc": "flag.kubeconfig", "context": "flag.kubeconfig", "cluster": "flag.kubeconfig", "user": "flag.kubeconfig",
	"token": "flag.token", "username": "flag.token", "password": "flag.token",
	"certificate-authority": "flag.token", "client-certificate": "flag.token", "client-key": "flag.token",
	"insecure-skip-tls-verify": "flag.server", "tls-server-name": "flag.server",
	"cache-dir": "flag.cachedir",
	"profile":   "flag.profile", "profile-output": "flag.profile",
	"v": "flag.verbose", "vmodule": "flag.verbose", "log-file": "flag.profile", "log-dir": "flag.profile",
	"kustomize": "flag.kustomize", "k": "flag.kustomize",
}

// valueFlags are the terminal's global flags that take a value as the next
// word, so that the word is not taken for a command.
var valueFlags = map[string]bool{"-n": true, "--namespace": true, "--as": true, "--as-group": true, "--as-uid": true, "--request-timeout": true}

// watches says whether kubectl's args ask for a watch (-w, --watch,
// --watch-only, or w among short flags, as in -Aw): the commands for which
// kubectl sets a handler of its own for the process's termination
// signals. It says yes to a few lines that do not watch (-owide); those
// run in a process of their own too, as they all do with
// Config.Processes.
func watches(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "--watch") {
			return true
		}
		if short, ok := strings.CutPrefix(a, "-"); ok && !strings.HasPrefix(short, "-") {
			letters, _, _ := strings.Cut(short, "=")
			if strings.ContainsRune(letters, 'w') {
				return true
			}
		}
	}
	return false
}

// checkLine refuses a kubectl command line (argv without "kubectl") that
// asks for something the terminal does not do.
//
// In a command's own process (Config.Processes), kubectl's -v is allowed:
// its log there is the command's stderr, the student's, not the server's.
func checkLine(argv []string, inChild bool) *refusal {
	var positional []string
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			short := !strings.HasPrefix(a, "--")
			if short && len(name) > 1 && (name[0] == 's' || name[0] == 'k' || name[0] == 'v') && !strings.Contains(a, "=") {
				// -sVALUE, -kDIR, -v9: a shorthand with its value attached.
				name = name[:1]
			}
			if key, ok := deniedGlobalFlags[name]; ok && (!short || len(name) == 1) && !(inChild && name == "v") {
				return refuse(key, a)
			}
			if valueFlags[a] {
				i++
			}
			continue
		}
		positional = append(positional, a)
	}
	if len(positional) == 0 {
		return nil
	}
	if key, ok := deniedCommands[positional[0]]; ok {
		return refuse(key, positional[0])
	}
	if len(positional) > 1 {
		if key, ok := deniedSubcommands[[2]string{positional[0], positional[1]}]; ok {
			return refuse(key, positional[0]+" "+positional[1])
		}
	}
	return nil
}

// checkFlags is the second layer: it reads the flags as kubectl's parser
// set them on the command about to run.
func checkFlags(cmd *cobra.Command) error {
	var found *refusal
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if found == nil {
			found = checkFlag(cmd, fl)
		}
	})
	if found != nil {
		return found
	}
	return nil
}

func checkFlag(cmd *cobra.Command, fl *pflag.Flag) *refusal {
	name, value := fl.Name, fl.Value.String()
	on := value == "true"
	switch {
	case name == "filename":
		values := []string{value}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		}
		for _, v := range values {
			if strings.Contains(v, "://") {
				return refuse("flag.url", v)
			}
			if v != "-" {
				return refuse("flag.filename", v)
			}
		}
	case name == "raw" && strings.Contains(value, "://"):
		// get --raw takes a path of this server's API, not a URL.
		return refuse("flag.server", "--raw "+value)
	case name == "kustomize":
		return refuse("flag.kustomize", "-k")
	case name == "output":
		if strings.Contains(value, "-file") {
			return refuse("flag.outputfile", value)
		}
	case name == "edit" && on:
		return refuse("cmd.edit", "--edit")
	case cmd.Name() == "run" && (name == "stdin" || name == "tty" || name == "attach") && on:
		return refuse("cmd.exec", "run --"+name)
	case cmd.Name() == "replace" && name == "force" && on:
		// kubectl replace --force copies stdin to a file on the server.
		return refuse("flag.replaceforce", "--force")
	case strings.Contains(name, "file") || strings.Contains(name, "dir") || name == "cert" || name == "key":
		return refuse("flag.file", "--"+name)
	}
	return nil
}

// readsStdin: the command's parsed --filename names "-".
func readsStdin(cmd *cobra.Command) bool {
	fl := cmd.Flags().Lookup("filename")
	if fl == nil || !fl.Changed {
		return false
	}
	if sv, ok := fl.Value.(pflag.SliceValue); ok {
		for _, v := range sv.GetSlice() {
			if v == "-" {
				return true
			}
		}
		return false
	}
	return fl.Value.String() == "-"
}
