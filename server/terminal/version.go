package terminal

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/cmd/version"
	"sigs.k8s.io/yaml"
)

// kubectlVersion is the kubectl the terminal runs: k8s.io/kubectl's
// module version v0.X.Y is kubectl vX.Y, as in Kubernetes' releases.
var kubectlVersion = func() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/kubectl" && strings.HasPrefix(d.Version, "v0.") {
				return "v1." + strings.TrimPrefix(d.Version, "v0.")
			}
		}
	}
	return "v1.37.2"
}()

// newVersion is kubectl version with its flags and help, printing the
// version of the k8s.io/kubectl it is built from: kubectl's own Run reads
// the client version from values a kubectl release sets when it links the
// binary, which a library user cannot, and fails on their absence. There
// is no kustomize here, so no Kustomize Version.
func newVersion(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := version.NewCmdVersion(f, streams)
	cmd.Run = func(c *cobra.Command, args []string) {
		clientOnly, _ := c.Flags().GetBool("client")
		output, _ := c.Flags().GetString("output")
		if len(args) != 0 {
			cmdutil.CheckErr(fmt.Errorf("extra arguments: %v", args))
		}
		if output != "" && output != "yaml" && output != "json" {
			cmdutil.CheckErr(errors.New(`--output must be 'yaml' or 'json'`))
		}
		major, minor, _ := strings.Cut(strings.TrimPrefix(kubectlVersion, "v"), ".")
		minor, _, _ = strings.Cut(minor, ".")
		v := version.Version{ClientVersion: &apimachineryversion.Info{Major: major, Minor: minor, GitVersion: kubectlVersion,
			GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH}}
		if !clientOnly {
			dc, err := f.ToDiscoveryClient()
			cmdutil.CheckErr(err)
			v.ServerVersion, err = dc.ServerVersion()
			cmdutil.CheckErr(err)
		}
		switch output {
		case "":
			fmt.Fprintf(streams.Out, "Client Version: %s\n", v.ClientVersion.GitVersion)
			if v.ServerVersion != nil {
				fmt.Fprintf(streams.Out, "Server Version: %s\n", v.ServerVersion.GitVersion)
			}
		case "yaml":
			b, err := yaml.Marshal(&v)
			cmdutil.CheckErr(err)
			fmt.Fprintln(streams.Out, string(b))
		case "json":
			b, err := json.MarshalIndent(&v, "", "  ")
			cmdutil.CheckErr(err)
			fmt.Fprintln(streams.Out, string(b))
		}
	}
	return cmd
}
