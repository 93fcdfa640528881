package kubeapi_test

import (
	"testing"

	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// TestOnOneServer runs, side by side on one server, the tests that only
// read what a new server holds or write nothing another of them reads
// (reviews, a minted token): starting a server costs more than most of
// them. A test that writes to the seeded namespaces, watches, or counts
// etcd's revision starts a server of its own.
func TestOnOneServer(t *testing.T) {
	t.Parallel()
	lab := kubelabtest.Start(t)
	kubelabtest.RunShared(t, lab,
		kubelabtest.Shared{Name: "ReviewAsTableIsNotAcceptable", Run: testReviewAsTableIsNotAcceptable},
		kubelabtest.Shared{Name: "EveryBuiltinGroupIsDiscovered", Run: testEveryBuiltinGroupIsDiscovered},
		kubelabtest.Shared{Name: "TokenReview", Run: testTokenReview},
		kubelabtest.Shared{Name: "TableInEitherMetaVersion", Run: testTableInEitherMetaVersion},
		kubelabtest.Shared{Name: "InvalidTimeoutIsBadRequest", Run: testInvalidTimeoutIsBadRequest},
		kubelabtest.Shared{Name: "AggregatedDiscovery", Run: testAggregatedDiscovery},
		kubelabtest.Shared{Name: "KubectlGetPodsTable", Run: testKubectlGetPodsTable},
		kubelabtest.Shared{Name: "EtcdctlShowsKubernetesProtobuf", Run: testEtcdctlShowsKubernetesProtobuf},
		kubelabtest.Shared{Name: "KubectlDiscovery", Run: testKubectlDiscovery},
		kubelabtest.Shared{Name: "KubectlOpenAPI", Run: testKubectlOpenAPI},
		kubelabtest.Shared{Name: "KubectlAuthCanI", Run: testKubectlAuthCanI},
	)
}
