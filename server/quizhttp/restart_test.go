package quizhttp_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelab/kubelab/internal/kubelabtest"
)

func shutdown(t *testing.T, lab *kubelabtest.Lab) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := lab.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// readAdminToken is the admin kubeconfig's bearer token (system:masters).
func readAdminToken(lab *kubelabtest.Lab) (string, error) {
	b, err := os.ReadFile(lab.KubeconfigPath())
	if err != nil {
		return "", err
	}
	cfg, err := clientcmd.Load(b)
	if err != nil {
		return "", err
	}
	for _, a := range cfg.AuthInfos {
		return strings.TrimSpace(a.Token), nil
	}
	return "", os.ErrNotExist
}
