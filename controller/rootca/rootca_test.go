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
	"github.com/kubelab/kubelab/internal/kubelabtest"
)

func TestEveryNamespaceGetsTheCAAndKeepsIt(t *testing.T) {
	lab := kubelabtest.Start(t)
	cs := lab.Clientset(t)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var first *corev1.ConfigMap
	eventually.Holds(t, "the CA ConfigMap in a new namespace", func() (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps("fresh").Get(ctx, rootca.ConfigMapName, metav1.GetOptions{})
		first = cm
		return err == nil, nil
	})
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
	if _, err := cs.CoreV1().ConfigMaps("fresh").Update(ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the edit undone", func() (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps("fresh").Get(ctx, rootca.ConfigMapName, metav1.GetOptions{})
		return err == nil && cm.Data[rootca.DataKey] == first.Data[rootca.DataKey], nil
	})

	// A deletion is undone too.
	if err := cs.CoreV1().ConfigMaps("fresh").Delete(ctx, rootca.ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "a new CA ConfigMap", func() (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps("fresh").Get(ctx, rootca.ConfigMapName, metav1.GetOptions{})
		return err == nil && cm.UID != first.UID && cm.Data[rootca.DataKey] == first.Data[rootca.DataKey], nil
	})
}
