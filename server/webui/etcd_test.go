package webui_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/kubelab/kubelab/internal/kubelabtest"
)

// TestInspectorLinksToTheStoredVersion: an events.k8s.io/v1 Event is kept
// as a core Event, so the etcd inspector links its key to the core API
// path, the version its bytes are.
func TestInspectorLinksToTheStoredVersion(t *testing.T) {
	lab := kubelabtest.Start(t)
	body := `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e1"},"eventTime":"2026-01-01T00:00:00.000000Z",` +
		`"reportingController":"example.com/test","reportingInstance":"t1","action":"Testing","reason":"Test","type":"Normal",` +
		`"regarding":{"kind":"Pod","namespace":"internals-demo","name":"ssa-demo"}}`
	if code, out := apiDo(t, lab, "POST", "/apis/events.k8s.io/v1/namespaces/internals-demo/events", "application/json", body); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, out)
	}
	code, out := apiDo(t, lab, "GET", "/ui/etcd/value?key=/registry/events/internals-demo/e1", "", "")
	if code != http.StatusOK {
		t.Fatalf("value: %d %s", code, out)
	}
	var got struct{ APIVersion, Kind, APIPath string }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.APIVersion != "v1" || got.APIPath != "/api/v1/namespaces/internals-demo/events/e1" {
		t.Fatalf("inspected %+v", got)
	}
}
