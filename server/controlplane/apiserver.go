package controlplane

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/request/union"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"

	"github.com/kubelab/kubelab/server"
)

// apiServer is kube-apiserver, built and ready to run.
type apiServer struct {
	// handler serves its requests: the aggregator's whole handler chain.
	handler http.Handler
	// loopback is its own client's configuration (a token of its own,
	// over its loopback listener): the controllers use it.
	loopback *rest.Config
	// certDir holds its self-signed serving certificate, and saKey the key
	// of its service-account tokens.
	certDir, saKey string
	run            func(context.Context) error
}

// newAPIServer builds kube-apiserver as its command does, from options
// set in code, with kubelab's front door added to its authenticators.
// ctx is its life: its post-start work ends with it.
func newAPIServer(ctx context.Context, cfg server.KubeCoreConfig) (_ *apiServer, err error) {
	api := &apiServer{certDir: filepath.Join(cfg.Dir, "certs")}
	if api.saKey, err = serviceAccountKey(filepath.Join(cfg.Dir, "sa.key")); err != nil {
		return nil, err
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("kube core: kube-apiserver's loopback listener: %w", err)
	}
	defer func() {
		if err != nil {
			listener.Close()
		}
	}()
	opts, err := apiServerOptions(cfg, api, listener)
	if err != nil {
		return nil, err
	}
	if err := opts.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, fmt.Errorf("kube core: feature gates: %w", err)
	}
	completed, err := opts.Complete(ctx)
	if err != nil {
		return nil, fmt.Errorf("kube core: kube-apiserver's options: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return nil, fmt.Errorf("kube core: kube-apiserver's options: %w", utilerrors.NewAggregate(errs))
	}
	config, err := app.NewConfig(completed)
	if err != nil {
		return nil, fmt.Errorf("kube core: %w", err)
	}
	// The front door's identities come first; then kube's own (the
	// loopback client's token, service-account tokens). Each of the three
	// servers keeps its own copy of the generic config: the aggregator's
	// serves requests, and the others get the same for consistency.
	generics := []*genericapiserver.Config{config.KubeAPIs.ControlPlane.Generic, &config.ApiExtensions.GenericConfig.Config, &config.Aggregator.GenericConfig.Config}
	for _, generic := range generics {
		generic.Authentication.Authenticator = union.New(frontDoorAuthenticator{isAdmin: cfg.IsAdminToken}, generic.Authentication.Authenticator)
	}
	// kubelab's traces, from kube's hooks (traces.go); the aggregator's
	// configuration comes last: its handler chain serves every request.
	if cfg.Traces != nil {
		traceServers(cfg.Traces, generics...)
		if crds := &config.ApiExtensions.ExtraConfig.CRDRESTOptionsGetter; *crds != nil {
			*crds = tracedRESTOptions{*crds}
		}
	}
	completedConfig, err := config.Complete()
	if err != nil {
		return nil, fmt.Errorf("kube core: %w", err)
	}
	chain, err := app.CreateServerChain(completedConfig)
	if err != nil {
		return nil, fmt.Errorf("kube core: %w", err)
	}
	prepared, err := chain.PrepareRun()
	if err != nil {
		return nil, fmt.Errorf("kube core: %w", err)
	}
	api.handler = chain.GenericAPIServer.Handler
	api.loopback = rest.CopyConfig(chain.GenericAPIServer.LoopbackClientConfig)
	api.run = prepared.Run
	return api, nil
}

// apiServerOptions are kube-apiserver's options, set as its flags would be
// (the same names a kube-apiserver command line uses), each with why.
func apiServerOptions(cfg server.KubeCoreConfig, api *apiServer, listener net.Listener) (*options.ServerRunOptions, error) {
	opts := options.NewServerRunOptions()
	args := []string{
		// kubelab's etcd: the embedded member, or the cluster it was
		// given. kubelab's own core is not started beside this one.
		"--etcd-servers=" + strings.Join(cfg.EtcdServers, ","),
		// Its own listener, on loopback: its loopback client (post-start
		// hooks, admission's informers) dials it. Everyone else comes
		// through kubelab's port; --secure-port is the listener's below.
		"--bind-address=127.0.0.1",
		// Its serving certificate is self-signed at first start and kept.
		"--cert-dir=" + api.certDir,
		// Identity of each request comes from the front door (local mode:
		// anonymous, which the local-mode binding makes cluster-admin) or
		// from kube's own credentials. Anonymous requests straight to the
		// loopback listener are refused.
		"--anonymous-auth=false",
		// As every kubeadm cluster: nodes by the Node authorizer, everyone
		// else by RBAC.
		"--authorization-mode=Node,RBAC",
		// kube's default admission plugins, and NodeRestriction with the
		// Node authorizer, as kubeadm enables it.
		"--enable-admission-plugins=NodeRestriction",
		// Service-account tokens: one key, made at first start and kept in
		// the data dir, signs and verifies them; the issuer is the
		// in-cluster name of the API, as in the reference cluster.
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + api.saKey,
		"--service-account-signing-key-file=" + api.saKey,
		// Service IPs come from kube's allocator in this range, the one
		// kind and the reference cluster use.
		"--service-cluster-ip-range=10.96.0.0/16",
		// API Priority and Fairness, on as in every real cluster: its
		// FlowSchemas and PriorityLevelConfigurations are served and obeyed.
		"--enable-priority-and-fairness=true",
		// kubelab's own flags of kube's names.
		"--request-timeout=" + cfg.RequestTimeout.String(),
		"--max-requests-inflight=" + strconv.Itoa(cfg.MaxRequestsInflight),
		"--max-mutating-requests-inflight=" + strconv.Itoa(cfg.MaxMutatingRequestsInflight),
		"--profiling=" + strconv.FormatBool(cfg.Profiling),
	}
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, set := range opts.Flags().FlagSets {
		fs.AddFlagSet(set)
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("kube core: options: %w", err)
	}
	// Each admission plugin's part in kubelab's traces: the tracing
	// decorator wraps the plugin itself, before kube's metrics.
	if cfg.Traces != nil {
		opts.Admission.GenericAdmission.Decorators = append(admission.Decorators{tracedAdmission}, opts.Admission.GenericAdmission.Decorators...)
	}
	opts.SecureServing.Listener = listener
	opts.SecureServing.BindPort = listener.Addr().(*net.TCPAddr).Port
	return opts, nil
}
