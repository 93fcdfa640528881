package kubeapi_test

import (
	"context"
	"encoding/json"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/server/kubeapi"
)

// storedSecret decodes the Secret as kubelab keeps it in etcd.
func storedSecret(t *testing.T, lab served, ns, name string) *corev1.Secret {
	t.Helper()
	resp, err := lab.EtcdClient().Get(context.Background(), "/registry/secrets/"+ns+"/"+name)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get of secret %s/%s: %v %v", ns, name, resp, err)
	}
	obj, _, err := protobuf.NewSerializer(kubeapi.Scheme, kubeapi.Scheme).Decode(resp.Kvs[0].Value, nil, &corev1.Secret{})
	if err != nil {
		t.Fatalf("decoding the stored secret: %v", err)
	}
	return obj.(*corev1.Secret)
}

// TestSecretStringDataIsMergedIntoData: as on kube-apiserver, a Secret's
// stringData is write-only: kubectl apply of a manifest with stringData
// stores its keys in data (stringData winning over data), and neither etcd
// nor the API ever holds stringData. A patch and a second apply do the same.
func TestSecretStringDataIsMergedIntoData(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t)
	manifest := `apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: internals-demo
data:
  user: b2xk        # "old"
  keep: a2VwdA==    # "kept"
stringData:
  user: new
  password: s3cret
`
	kubectlIn(t, lab, manifest, "apply", "-f", "-")
	want := map[string]string{"user": "new", "keep": "kept", "password": "s3cret"}
	check := func(when string) {
		t.Helper()
		stored := storedSecret(t, lab, "internals-demo", "creds")
		if len(stored.StringData) != 0 || !sameData(stored.Data, want) {
			t.Fatalf("%s: etcd holds data %q stringData %q, want data %q and no stringData", when, stored.Data, stored.StringData, want)
		}
		var served corev1.Secret
		if err := json.Unmarshal([]byte(kubectl(t, lab, "-n", "internals-demo", "get", "secret", "creds", "-o", "json")), &served); err != nil {
			t.Fatal(err)
		}
		if len(served.StringData) != 0 || !sameData(served.Data, want) {
			t.Fatalf("%s: the API serves data %q stringData %q, want data %q and no stringData", when, served.Data, served.StringData, want)
		}
	}
	check("after create")

	kubectl(t, lab, "-n", "internals-demo", "patch", "secret", "creds", "--type=merge", "-p", `{"stringData":{"password":"changed"}}`)
	want["password"] = "changed"
	check("after a merge patch")

	kubectlIn(t, lab, manifest, "apply", "-f", "-")
	want["password"] = "s3cret"
	check("after a second apply")

	kubectlIn(t, lab, manifest, "apply", "--server-side", "--force-conflicts", "-f", "-")
	check("after a server-side apply")
}

func sameData(got map[string][]byte, want map[string]string) bool {
	g := map[string]string{}
	for k, v := range got {
		g[k] = string(v)
	}
	return maps.Equal(g, want)
}
