package controlplane

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	clientgokubescheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
	controllerconfig "k8s.io/kubernetes/cmd/kube-controller-manager/app/config"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
)

// newControllers builds kube-controller-manager as its command does, from
// flags set in code, over kube-apiserver's loopback client instead of a
// kubeconfig file; what it returns runs the controllers until its context
// ends. ctx is their life.
func newControllers(ctx context.Context, api *apiServer) (func(context.Context) error, error) {
	opts, err := options.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, fmt.Errorf("kube core: kube-controller-manager's options: %w", err)
	}
	known, disabled, aliases := app.KnownControllers(), app.ControllersDisabledByDefault(), app.ControllerAliases()
	rootCA := filepath.Join(api.certDir, "ca.crt")
	if err := servingCA(filepath.Join(api.certDir, "apiserver.crt"), rootCA); err != nil {
		return nil, err
	}
	args := []string{
		// Every controller that needs no kubelet or node network: the
		// namespace, garbage-collector, service-account and token,
		// root-CA publisher, ResourceQuota, Deployment, ReplicaSet, Job
		// and the others. Those left out act on nodes: with no kubelet
		// reporting, node lifecycle would taint and evict, IPAM would
		// wait for pod CIDRs. The reference cluster runs the same set.
		"--controllers=*,-node-lifecycle-controller,-node-ipam-controller,-taint-eviction-controller,-device-taint-eviction-controller",
		// One control plane in one process: nothing to elect.
		"--leader-elect=false",
		// No HTTP server of its own: requests are kube-apiserver's.
		"--secure-port=0",
		// Service-account token secrets are signed with the key
		// kube-apiserver verifies them with.
		"--service-account-private-key-file=" + api.saKey,
		// The CA each namespace's kube-root-ca.crt carries, that pods
		// verify the API with: the one that signed kube-apiserver's
		// serving certificate at its first start.
		"--root-ca-file=" + rootCA,
		// The controllers act as the loopback client, as kubeadm's
		// controller manager acts as its own identity, not as a service
		// account each.
		"--use-service-account-credentials=false",
	}
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, set := range opts.Flags(known, disabled, aliases).FlagSets {
		fs.AddFlagSet(set)
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("kube core: kube-controller-manager's options: %w", err)
	}
	if err := opts.Validate(known, disabled, aliases); err != nil {
		return nil, fmt.Errorf("kube core: kube-controller-manager's options: %w", err)
	}
	// What its command builds from --kubeconfig, built from the loopback
	// client's configuration.
	loopback := rest.CopyConfig(api.loopback)
	loopback.DisableCompression = true
	loopback.AcceptContentTypes = opts.Generic.ClientConnection.AcceptContentTypes
	loopback.ContentType = opts.Generic.ClientConnection.ContentType
	loopback.QPS = opts.Generic.ClientConnection.QPS
	loopback.Burst = int(opts.Generic.ClientConnection.Burst)
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(loopback, options.KubeControllerManagerUserAgent))
	if err != nil {
		return nil, fmt.Errorf("kube core: kube-controller-manager's client: %w", err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	c := &controllerconfig.Config{
		Client:                    client,
		Kubeconfig:                loopback,
		EventBroadcaster:          broadcaster,
		EventRecorder:             broadcaster.NewRecorder(clientgokubescheme.Scheme, corev1.EventSource{Component: options.KubeControllerManagerUserAgent}),
		ControllerShutdownTimeout: opts.ControllerShutdownTimeout,
		ComponentGlobalsRegistry:  opts.ComponentGlobalsRegistry,
	}
	if err := opts.ApplyTo(c, known, disabled, aliases); err != nil {
		return nil, fmt.Errorf("kube core: kube-controller-manager's options: %w", err)
	}
	completed := c.Complete()
	return func(ctx context.Context) error { return app.Run(ctx, completed) }, nil
}
