package kubeapi_test

import (
	"testing"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
	"github.com/kubelab/kubelab/internal/sidebyside"
)

// TestOnOneAPI runs, side by side on one API behind kubelab's front door,
// the tests that only read what a new API holds or write nothing another
// of them reads: starting even the API alone costs more than most of
// them. A test that writes to the demo namespace, watches, or counts
// etcd's revision starts an API of its own.
func TestOnOneAPI(t *testing.T) {
	t.Parallel()
	sidebyside.Run(t, apitest.Start(t, withPipeline), map[string]func(*testing.T, *apitest.Server){
		"TableInEitherMetaVersion":       testTableInEitherMetaVersion,
		"KubectlGetPodsTable":            testKubectlGetPodsTable,
		"EtcdctlShowsKubernetesProtobuf": testEtcdctlShowsKubernetesProtobuf,
		"KubectlDiscovery":               testKubectlDiscovery,
		"KubectlOpenAPI":                 testKubectlOpenAPI,
		// The access and token reviews, answered by the front door, and
		// the groups that serve them.
		"ReviewAsTableIsNotAcceptable":  testReviewAsTableIsNotAcceptable,
		"EveryBuiltinGroupIsDiscovered": testEveryBuiltinGroupIsDiscovered,
		"TokenReview":                   testTokenReview,
		"KubectlAuthCanI":               testKubectlAuthCanI,
	})
}

// TestOnOneServer does the same on a whole kubelab, for the request's
// timeout, which the server's limits read, and aggregated discovery,
// whose two requests must cover the aggregator's APIServices and the
// CRDs' groups too.
func TestOnOneServer(t *testing.T) {
	t.Parallel()
	sidebyside.Run(t, kubelabtest.Start(t), map[string]func(*testing.T, *kubelabtest.Lab){
		"AggregatedDiscovery":        testAggregatedDiscovery,
		"InvalidTimeoutIsBadRequest": testInvalidTimeoutIsBadRequest,
	})
}
