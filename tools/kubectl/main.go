// Command kubectl is the upstream kubectl, built from k8s.io/kubectl at the
// version pinned in tools/go.mod, so that tests drive kubelab with the real
// client. tools/build.sh builds it into bin/kubectl and stamps its version.
//
// main does what the upstream cmd/kubectl main does, nothing more.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	// Client auth plugins (exec, OIDC), as in the upstream kubectl.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

func main() {
	// -v applies from the start, also while plugins and kuberc are loaded.
	_, _ = logs.GlogSetter(cmd.GetLogVerbosity(os.Args))
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		// Print the error the way kubectl does ("Error from server (NotFound): ...")
		// and exit with kubectl's exit code.
		util.CheckErr(err)
	}
}
