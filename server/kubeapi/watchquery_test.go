package kubeapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/internal/apitest"
)

// kube-apiserver reads any watch value but false and 0 (in any case) as a
// watch, a bare ?watch too: asked of the real one, ?watch=yes and ?watch=
// stream events and ?watch=False lists. kubelab answers the same.
func TestWatchQueryValuesAreReadAsKubeReadsThem(t *testing.T) {
	lab := apitest.Start(t)
	// The demo namespace holds pods from the start: a watch begins with
	// their ADDED events, a list is a PodList.
	const list = podsPath
	for q, wantWatch := range map[string]bool{
		"watch=yes": true, "watch=": true, "watch": true, "watch=TRUE": true,
		"watch=False": false, "watch=0": false,
	} {
		resp, body := do(t, lab, "GET", list+"?"+q+"&timeoutSeconds=1", "", "")
		if resp.StatusCode != 200 {
			t.Fatalf("?%s: %d %s", q, resp.StatusCode, body)
		}
		first, _, _ := strings.Cut(string(body), "\n")
		var got struct{ Kind, Type string }
		if err := json.Unmarshal([]byte(first), &got); err != nil {
			t.Fatalf("?%s: %v in %s", q, err, body)
		}
		if isWatch := got.Type != ""; isWatch != wantWatch {
			t.Errorf("?%s answered kind %q type %q; want a watch: %v", q, got.Kind, got.Type, wantWatch)
		}
		if !wantWatch && got.Kind != "PodList" {
			t.Errorf("?%s answered kind %q, want PodList", q, got.Kind)
		}
	}
}
