package webui_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/kubelab/kubelab/internal/apitest"
)

// testInspectorLinksToTheStoredVersion: an events.k8s.io/v1 Event is kept
// as a core Event, so the etcd inspector links its key to the core API
// path, the version its bytes are. The Event goes in a namespace of the
// test's own, as the server is shared.
func testInspectorLinksToTheStoredVersion(t *testing.T, lab *apitest.Server) {
	const ns = "inspector-stored-version"
	if code, out := apiDo(t, lab, "POST", "/api/v1/namespaces", "application/json",
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+ns+`"}}`); code != http.StatusCreated {
		t.Fatalf("create the namespace: %d %s", code, out)
	}
	body := `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e1"},"eventTime":"2026-01-01T00:00:00.000000Z",` +
		`"reportingController":"example.com/test","reportingInstance":"t1","action":"Testing","reason":"Test","type":"Normal",` +
		`"regarding":{"kind":"Pod","namespace":"` + ns + `","name":"p"}}`
	if code, out := apiDo(t, lab, "POST", "/apis/events.k8s.io/v1/namespaces/"+ns+"/events", "application/json", body); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, out)
	}
	code, out := apiDo(t, lab, "GET", "/ui/etcd/value?key=/registry/events/"+ns+"/e1", "", "")
	if code != http.StatusOK {
		t.Fatalf("value: %d %s", code, out)
	}
	var got struct{ APIVersion, Kind, APIPath string }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.APIVersion != "v1" || got.APIPath != "/api/v1/namespaces/"+ns+"/events/e1" {
		t.Fatalf("inspected %+v", got)
	}
}
