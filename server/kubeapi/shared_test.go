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
	for _, test := range []struct {
		name string
		run  func(*testing.T, *kubelabtest.Lab)
	}{
		{"ReviewAsTableIsNotAcceptable", testReviewAsTableIsNotAcceptable},
		{"EveryBuiltinGroupIsDiscovered", testEveryBuiltinGroupIsDiscovered},
		{"TokenReview", testTokenReview},
		{"TableInEitherMetaVersion", testTableInEitherMetaVersion},
		{"InvalidTimeoutIsBadRequest", testInvalidTimeoutIsBadRequest},
		{"AggregatedDiscovery", testAggregatedDiscovery},
		{"KubectlGetPodsTable", testKubectlGetPodsTable},
		{"EtcdctlShowsKubernetesProtobuf", testEtcdctlShowsKubernetesProtobuf},
		{"KubectlDiscovery", testKubectlDiscovery},
		{"KubectlOpenAPI", testKubectlOpenAPI},
		{"KubectlAuthCanI", testKubectlAuthCanI},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			test.run(t, lab)
		})
	}
}
