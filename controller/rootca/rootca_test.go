package rootca_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/controller/rootca"
	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/registry/registrytest"
	"github.com/kubelab/kubelab/server/pki"
	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// user is who the test acts as, as a student's kubectl would.
var user = pipeline.User{Name: "student", Groups: []string{pipeline.AllAuthenticated}}

// startWithCA is registrytest.Start that also gives the CA kubelab keeps
// in the same etcd, loaded as the server loads it.
func startWithCA(t *testing.T) (*registry.Registry, []byte) {
	t.Helper()
	m := storagetest.StartEtcd(t)
	reg := registrytest.On(t, m.Client())
	ca, err := pki.Load(context.Background(), m.Client(), pki.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return reg, ca.CertPEM()
}

func TestEveryNamespaceGetsTheCAAndKeepsIt(t *testing.T) {
	reg, caPEM := startWithCA(t)
	namespaces, configMaps := registrytest.Core(t, reg, "namespaces"), registrytest.Core(t, reg, "configmaps")
	registrytest.Run(t, registry.Controller("root-ca-cert-publisher"), rootca.New(namespaces, configMaps, caPEM, nil).Run,
		"github.com/kubelab/kubelab/controller", "github.com/kubelab/kubelab/controller/rootca")
	ctx := registry.WithUser(context.Background(), user)
	key := storage.Key{Namespace: "fresh", Name: rootca.ConfigMapName}
	get := func() (*corev1.ConfigMap, error) {
		obj, err := configMaps.Get(ctx, key, "")
		if err != nil {
			return nil, err
		}
		return obj.(*corev1.ConfigMap), nil
	}

	if _, err := namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}}, registry.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var first *corev1.ConfigMap
	eventually.Holds(t, "the CA ConfigMap in a new namespace", func() (bool, error) {
		cm, err := get()
		first = cm
		return err == nil, err
	})
	if first.Data[rootca.DataKey] != string(caPEM) {
		t.Fatalf("ca.crt is %q, want the CA the server serves under", first.Data[rootca.DataKey])
	}
	block, _ := pem.Decode([]byte(first.Data[rootca.DataKey]))
	if block == nil {
		t.Fatalf("ca.crt is not PEM: %q", first.Data[rootca.DataKey])
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || !cert.IsCA {
		t.Fatalf("ca.crt is not a CA certificate: %v", err)
	}
	if first.Annotations["kubernetes.io/description"] == "" {
		t.Errorf("no description annotation: %v", first.Annotations)
	}

	// An edit is undone.
	edited := first.DeepCopy()
	edited.Data[rootca.DataKey] = "not a CA"
	if _, err := configMaps.Update(ctx, key, registry.DefaultUpdatedObjectInfo(edited), registry.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the edit undone", func() (bool, error) {
		cm, err := get()
		return err == nil && cm.Data[rootca.DataKey] == first.Data[rootca.DataKey], err
	})

	// A deletion is undone too.
	if _, _, err := configMaps.Delete(ctx, key, registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "a new CA ConfigMap", func() (bool, error) {
		cm, err := get()
		return err == nil && cm.UID != first.UID && cm.Data[rootca.DataKey] == first.Data[rootca.DataKey], err
	})
}
