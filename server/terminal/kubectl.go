package terminal

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
	"k8s.io/kubectl/pkg/cmd/annotate"
	"k8s.io/kubectl/pkg/cmd/apiresources"
	"k8s.io/kubectl/pkg/cmd/apply"
	"k8s.io/kubectl/pkg/cmd/auth"
	"k8s.io/kubectl/pkg/cmd/autoscale"
	"k8s.io/kubectl/pkg/cmd/certificates"
	"k8s.io/kubectl/pkg/cmd/clusterinfo"
	"k8s.io/kubectl/pkg/cmd/create"
	kdelete "k8s.io/kubectl/pkg/cmd/delete"
	"k8s.io/kubectl/pkg/cmd/describe"
	"k8s.io/kubectl/pkg/cmd/drain"
	"k8s.io/kubectl/pkg/cmd/events"
	"k8s.io/kubectl/pkg/cmd/explain"
	"k8s.io/kubectl/pkg/cmd/expose"
	"k8s.io/kubectl/pkg/cmd/get"
	"k8s.io/kubectl/pkg/cmd/label"
	"k8s.io/kubectl/pkg/cmd/patch"
	"k8s.io/kubectl/pkg/cmd/replace"
	"k8s.io/kubectl/pkg/cmd/rollout"
	"k8s.io/kubectl/pkg/cmd/run"
	"k8s.io/kubectl/pkg/cmd/scale"
	"k8s.io/kubectl/pkg/cmd/set"
	"k8s.io/kubectl/pkg/cmd/taint"
	"k8s.io/kubectl/pkg/cmd/top"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	utilcomp "k8s.io/kubectl/pkg/util/completion"
	"k8s.io/kubectl/pkg/util/templates"
)

// clusterName names the one cluster of the in-memory kubeconfig. Its
// server address is never dialled: the transport serves every request in
// process (see inProcess), so it only has to parse.
const clusterName = "kubelab"

// exit is how a command ends with a status other than 0. kubectl's
// CheckErr calls os.Exit, which in a server would end every student's
// session: BehaviorOnFatal turns it into this panic, which the runner
// recovers on the command's own goroutine.
type exit struct {
	msg  string
	code int
}

var fatalOnce sync.Once

func catchFatal() {
	fatalOnce.Do(func() {
		cmdutil.BehaviorOnFatal(func(msg string, code int) { panic(exit{msg: msg, code: code}) })
	})
}

// identity is who a command acts as and where: the browser's credentials,
// and the namespace kubectl defaults to.
type identity struct {
	router    http.Handler
	from      Caller
	namespace string
	// toSocket, in a command's child process (see child.go), carries its
	// requests to the command's socket instead: the server there serves
	// them with router as from. It is one for the whole line, so that a
	// loop's hundred kubectl runs share its connections: each run's own
	// transport kept its idle ones open, a descriptor each, until the
	// line met the process's limit of them.
	toSocket http.RoundTripper
	// etcd is the member a line's etcdctl reads, in local mode only; in
	// the command's child process, toEtcd carries etcdctl's words to the
	// server (see etcdbridge.go).
	etcd   EtcdReader
	toEtcd http.RoundTripper
	// server is the address the student's browser reached kubelab at,
	// which kubectl names as its server (in -v's logs, cluster-info). It
	// is never dialled: the transport serves every request.
	server string
	// logger gets the stack of a command that failed inside kubectl, not
	// through its fatal handler: a bug to fix, not a student's error.
	logger *slog.Logger
}

// clientGetter is kubectl's RESTClientGetter for one command: a REST
// config that reaches kubelab's API in process as the student, discovery
// cached in memory for the command's life only (nothing on disk), and an
// in-memory kubeconfig (nothing read from the server's files: no
// $KUBECONFIG, no $HOME/.kube).
type clientGetter struct {
	id  identity
	ctx context.Context
	// warnings gets the API's warnings: per command, never the process's
	// default handler, which would mix students' commands.
	warnings io.Writer

	// The global flags a student may use. The others kubectl has
	// (--server, --kubeconfig, --token, --cache-dir...) are not defined.
	namespace, as, asUID, timeout string
	asGroups                      []string
	// verbosity is kubectl's -v, defined in a command's own process only
	// (see logTo).
	verbosity        string
	warningsAsErrors bool
	// warningCount writes the API's warnings to the command's stderr and
	// counts them, for --warnings-as-errors.
	warningCount warningCounter

	mu        sync.Mutex
	discovery discovery.CachedDiscoveryInterface

	// stdin is the stdin box, lent to the command as os.Stdin if it reads
	// -f - (see lendStdin); releaseStdin gives os.Stdin back.
	stdin        io.Reader
	releaseStdin func()
}

var _ genericclioptions.RESTClientGetter = (*clientGetter)(nil)

type warningCounter interface {
	rest.WarningHandler
	WarningCount() int
}

func newClientGetter(id identity, ctx context.Context, warnings io.Writer, stdin io.Reader) *clientGetter {
	return &clientGetter{id: id, ctx: ctx, warnings: warnings, stdin: stdin,
		warningCount: rest.NewWarningWriter(warnings, rest.WarningWriterOptions{Deduplicate: true})}
}

func (g *clientGetter) addFlags(cmd *cobra.Command) {
	fl := cmd.PersistentFlags()
	fl.StringVarP(&g.namespace, "namespace", "n", "", "If present, the namespace scope for this CLI request")
	fl.StringVar(&g.as, "as", "", "Username to impersonate for the operation (RBAC decides whether you may).")
	fl.StringArrayVar(&g.asGroups, "as-group", nil, "Group to impersonate for the operation, this flag can be repeated to specify multiple groups.")
	fl.StringVar(&g.asUID, "as-uid", "", "UID to impersonate for the operation.")
	fl.BoolVar(&g.warningsAsErrors, "warnings-as-errors", false, "Treat warnings received from the server as errors and exit with a non-zero exit code")
	if g.id.toSocket != nil {
		fl.StringVarP(&g.verbosity, "v", "v", "0", "number for the log level verbosity: at 6 and above, kubectl logs each request it sends")
	}
	fl.StringVar(&g.timeout, "request-timeout", "0", "The length of time to wait before giving up on a single server request. Non-zero values should contain a corresponding time unit (e.g. 1s, 2m, 3h). A value of zero means don't timeout requests.")
}

// ToRESTConfig implements genericclioptions.RESTClientGetter.
func (g *clientGetter) ToRESTConfig() (*rest.Config, error) {
	host, transport := cmp.Or(g.id.server, "https://"+clusterName+".invalid"), http.RoundTripper(&inProcess{router: g.id.router, from: g.id.from, ctx: g.ctx})
	if g.id.toSocket != nil {
		transport = g.id.toSocket
	}
	cfg := &rest.Config{
		Host:      host,
		Transport: transport,
		UserAgent: "kubectl/" + kubectlVersion + " (kubelab terminal)",
		// kubectl's own defaults (NewConfigFlags plus its discovery rates).
		QPS: 50, Burst: 300,
	}
	cfg.WarningHandler = g.warningCount
	cfg.Impersonate = rest.ImpersonationConfig{UserName: g.as, UID: g.asUID, Groups: g.asGroups}
	if g.timeout != "" && g.timeout != "0" {
		d, err := time.ParseDuration(g.timeout)
		if err != nil {
			return nil, fmt.Errorf("invalid timeout value %q: timeout must be a duration such as 5s", g.timeout)
		}
		cfg.Timeout = d
	}
	return cfg, nil
}

// unixTransport sends requests to the Unix socket at path.
func unixTransport(path string) *http.Transport {
	return &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}
}

// plainHTTP sends each request in plain HTTP, whatever the server's scheme
// says: to the command's socket, where the server behind it gives each
// request the browser's TLS state and credentials.
type plainHTTP struct{ *http.Transport }

func (p plainHTTP) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == "http" {
		return p.Transport.RoundTrip(r)
	}
	plain := r.Clone(r.Context())
	plain.URL.Scheme = "http"
	return p.Transport.RoundTrip(plain)
}

// klogFlags are klog's settings, which are the process's.
var klogFlags = sync.OnceValue(func() *flag.FlagSet {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	return fs
})

// logTo sends klog's log at verbosity v, where client-go logs each request
// from 6 up, to w, the command's stderr: then a line's 2>&1 and pipes see
// it as they see kubectl's other output. In a command's own process only
// (Config.Processes): in the server, it would be every student's.
func logTo(w io.Writer, v string) error {
	fs := klogFlags()
	if err := fs.Set("v", v); err != nil {
		return fmt.Errorf("invalid argument %q for \"-v, --v\" flag: %v", v, err)
	}
	for name, value := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
		if err := fs.Set(name, value); err != nil {
			return err
		}
	}
	klog.SetOutput(w)
	return nil
}

// ToDiscoveryClient implements genericclioptions.RESTClientGetter.
func (g *clientGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.discovery != nil {
		return g.discovery, nil
	}
	cfg, err := g.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.Burst = 300
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	g.discovery = memory.NewMemCacheClient(dc)
	return g.discovery, nil
}

// ToRESTMapper implements genericclioptions.RESTClientGetter, as kubectl
// does: discovery's mapper with the short names (po, deploy...).
func (g *clientGetter) ToRESTMapper() (meta.RESTMapper, error) {
	dc, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(dc)
	return restmapper.NewShortcutExpander(mapper, dc, func(w string) { fmt.Fprintln(g.warnings, "Warning: "+w) }), nil
}

// ToRawKubeConfigLoader implements genericclioptions.RESTClientGetter with
// a kubeconfig held in memory: one cluster, one user, and a context whose
// namespace is the student's.
func (g *clientGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[clusterName] = &clientcmdapi.Cluster{Server: cmp.Or(g.id.server, "https://"+clusterName+".invalid")}
	cfg.AuthInfos[clusterName] = &clientcmdapi.AuthInfo{}
	cfg.Contexts[clusterName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: clusterName, Namespace: g.id.namespace}
	cfg.CurrentContext = clusterName
	overrides := &clientcmd.ConfigOverrides{}
	overrides.Context.Namespace = g.namespace
	return clientcmd.NewDefaultClientConfig(*cfg, overrides)
}

// newKubectl builds kubectl's command tree for one command, from
// k8s.io/kubectl's own commands with a factory over g. The commands a
// student may not run here are not in it at all (see policy.go for the
// friendly word on each).
func newKubectl(g *clientGetter, streams genericiooptions.IOStreams) *cobra.Command {
	f := cmdutil.NewFactory(g)
	root := &cobra.Command{
		Use:   "kubectl",
		Short: "kubectl controls the Kubernetes cluster manager",
		Long:  "kubectl controls the Kubernetes cluster manager, here kubelab's API server, as you.",
		Run: func(cmd *cobra.Command, _ []string) {
			_ = cmd.Help()
		},
		SilenceErrors: true,
		SilenceUsage:  true,
		// The flags that reach the server's files, other servers or other
		// programs are checked once pflag has parsed them, so that what is
		// checked is what kubectl will use.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFlags(cmd); err != nil {
				return err
			}
			if g.id.toSocket != nil {
				if err := logTo(streams.ErrOut, g.verbosity); err != nil {
					return err
				}
			}
			if readsStdin(cmd) {
				release, err := lendStdin(cmd.Context(), g.stdin)
				if err != nil {
					return err
				}
				g.releaseStdin = release
			}
			return nil
		},
		// kubectl's --warnings-as-errors, as its root command does it.
		PersistentPostRunE: func(*cobra.Command, []string) error {
			if !g.warningsAsErrors {
				return nil
			}
			switch n := g.warningCount.WarningCount(); n {
			case 0:
				return nil
			case 1:
				return fmt.Errorf("%d warning received", n)
			default:
				return fmt.Errorf("%d warnings received", n)
			}
		},
	}
	root.SetGlobalNormalizationFunc(cliflag.WordSepNormalizeFunc)
	g.addFlags(root)
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)

	getCmd := get.NewCmdGet("kubectl", f, streams)
	getCmd.ValidArgsFunction = utilcomp.ResourceTypeAndNameCompletionFunc(f)
	groups := templates.CommandGroups{
		{Message: "Basic Commands (Beginner):", Commands: []*cobra.Command{
			create.NewCmdCreate(f, streams), expose.NewCmdExposeService(f, streams), run.NewCmdRun(f, streams), set.NewCmdSet(f, streams)}},
		{Message: "Basic Commands (Intermediate):", Commands: []*cobra.Command{
			explain.NewCmdExplain("kubectl", f, streams), getCmd, kdelete.NewCmdDelete(f, streams)}},
		{Message: "Deploy Commands:", Commands: []*cobra.Command{
			rollout.NewCmdRollout("kubectl", f, streams), scale.NewCmdScale(f, streams), autoscale.NewCmdAutoscale(f, streams)}},
		{Message: "Cluster Management Commands:", Commands: []*cobra.Command{
			certificates.NewCmdCertificate(f, streams), clusterinfo.NewCmdClusterInfo(f, streams), top.NewCmdTop(f, streams),
			drain.NewCmdCordon(f, streams), drain.NewCmdUncordon(f, streams), drain.NewCmdDrain(f, streams), taint.NewCmdTaint(f, streams)}},
		{Message: "Troubleshooting and Debugging Commands:", Commands: []*cobra.Command{
			describe.NewCmdDescribe("kubectl", f, streams), newAuth(f, streams), events.NewCmdEvents(f, streams)}},
		{Message: "Advanced Commands:", Commands: []*cobra.Command{
			apply.NewCmdApply("kubectl", f, streams), patch.NewCmdPatch(f, streams), replace.NewCmdReplace(f, streams)}},
		{Message: "Settings Commands:", Commands: []*cobra.Command{
			label.NewCmdLabel(f, streams), annotate.NewCmdAnnotate("kubectl", f, streams)}},
	}
	groups.Add(root)
	templates.ActsAsRootCommand(root, nil, groups...)
	root.AddCommand(apiresources.NewCmdAPIResources(f, streams), apiresources.NewCmdAPIVersions(f, streams), newVersion(f, streams))
	_ = root.RegisterFlagCompletionFunc("namespace", func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return utilcomp.CompGetResource(f, "namespace", toComplete), cobra.ShellCompDirectiveNoFileComp
	})
	return root
}

// newAuth is kubectl's auth with its own subcommands, but can-i's Run
// replaced: kubectl's calls os.Exit(1) when the answer is no, which here
// would stop the server. The options, flags and checks are kubectl's.
func newAuth(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := auth.NewCmdAuth(f, streams)
	for _, sub := range cmd.Commands() {
		if sub.Name() != "can-i" {
			continue
		}
		sub.Run = func(c *cobra.Command, args []string) {
			fl := c.Flags()
			o := &auth.CanIOptions{IOStreams: streams}
			o.AllNamespaces, _ = fl.GetBool("all-namespaces")
			o.Quiet, _ = fl.GetBool("quiet")
			o.List, _ = fl.GetBool("list")
			o.NoHeaders, _ = fl.GetBool("no-headers")
			o.Subresource, _ = fl.GetString("subresource")
			cmdutil.CheckErr(o.Complete(f, args))
			cmdutil.CheckErr(o.Validate())
			if o.List {
				cmdutil.CheckErr(o.RunAccessList())
				return
			}
			allowed, err := o.RunAccessCheck()
			cmdutil.CheckErr(err)
			if !allowed {
				panic(exit{code: 1})
			}
		}
	}
	return cmd
}

// runKubectl runs argv (without "kubectl") to its end and returns its exit
// status. A command that panics (kubectl's fatal errors do, see exit)
// ends with its message on stderr, not with the server. say tells the
// student why a command was refused, in their language.
func runKubectl(ctx context.Context, id identity, argv []string, stdin io.Reader, streams genericiooptions.IOStreams, say func(*refusal)) (code int) {
	catchFatal()
	g := newClientGetter(id, ctx, streams.ErrOut, stdin)
	root := newKubectl(g, streams)
	root.SetArgs(argv)
	defer func() {
		if g.releaseStdin != nil {
			g.releaseStdin()
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			e, ok := p.(exit)
			if !ok {
				e = exit{msg: fmt.Sprintf("error: kubectl failed: %v", p), code: 1}
				if id.logger != nil {
					id.logger.Error("kubectl panicked in the terminal", "args", argv, "panic", p, "stack", string(debug.Stack()))
				}
			}
			if e.msg != "" {
				fmt.Fprintln(streams.ErrOut, strings.TrimSuffix(e.msg, "\n"))
			}
			code = e.code
		}
	}()
	if err := root.ExecuteContext(ctx); err != nil {
		var r *refusal
		if errors.As(err, &r) {
			say(r)
			return 1
		}
		fmt.Fprintf(streams.ErrOut, "error: %v\n", err)
		if !strings.Contains(err.Error(), "--help' for usage") {
			name := "kubectl"
			if c, _, ferr := root.Find(argv); ferr == nil && c != root {
				name = c.CommandPath()
			}
			fmt.Fprintf(streams.ErrOut, "See '%s --help' for usage.\n", name)
		}
		return 1
	}
	return 0
}
