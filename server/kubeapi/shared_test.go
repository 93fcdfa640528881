package kubeapi_test

import (
	"testing"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// TestOnTheAPIAlone runs, side by side on one API, the tests that only
// read what a new API holds or write nothing another of them reads:
// starting even the API alone costs more than most of them. A test that
// writes to the demo namespace, watches, or counts etcd's revision starts
// an API of its own.
func TestOnTheAPIAlone(t *testing.T) {
	t.Parallel()
	api := apitest.Start(t)
	for name, run := range map[string]func(*testing.T, *apitest.Server){
		"TableInEitherMetaVersion":       testTableInEitherMetaVersion,
		"KubectlGetPodsTable":            testKubectlGetPodsTable,
		"EtcdctlShowsKubernetesProtobuf": testEtcdctlShowsKubernetesProtobuf,
		"KubectlDiscovery":               testKubectlDiscovery,
		"KubectlOpenAPI":                 testKubectlOpenAPI,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run(t, api)
		})
	}
}

// TestOnOneServer does the same on a whole kubelab, for the tests of
// what the API asks of the request pipeline: the access and token
// reviews, the groups that serve them, and the request's timeout, which
// the server's front door reads; and aggregated discovery, whose two
// requests must cover the aggregator's APIServices and the CRDs' groups
// too.
func TestOnOneServer(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t)
	kubelabtest.RunShared(t, lab,
		kubelabtest.Shared{Name: "ReviewAsTableIsNotAcceptable", Run: testReviewAsTableIsNotAcceptable},
		kubelabtest.Shared{Name: "EveryBuiltinGroupIsDiscovered", Run: testEveryBuiltinGroupIsDiscovered},
		kubelabtest.Shared{Name: "TokenReview", Run: testTokenReview},
		kubelabtest.Shared{Name: "KubectlAuthCanI", Run: testKubectlAuthCanI},
		kubelabtest.Shared{Name: "AggregatedDiscovery", Run: testAggregatedDiscovery},
		kubelabtest.Shared{Name: "InvalidTimeoutIsBadRequest", Run: testInvalidTimeoutIsBadRequest},
	)
}
