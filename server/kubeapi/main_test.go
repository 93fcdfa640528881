package kubeapi_test

import (
	"os"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// TestMain runs four tests at a time: each starts a server of its own and
// most wait on watches that end by timeoutSeconds, so on two cores four
// side by side take about half as long as two.
func TestMain(m *testing.M) {
	os.Exit(kubelabtest.RunParallel(m, 4))
}

// served is a kubelab the tests send requests to: the API alone
// (apitest), or a whole kubelab (kubelabtest) for what needs the request
// pipeline or the controllers.
type served interface {
	URL() string
	KubeconfigPath() string
	EtcdClient() *clientv3.Client
}
