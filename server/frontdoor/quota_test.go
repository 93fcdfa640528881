package frontdoor_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/controller/resourcequota"
	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/internal/eventually"
	"github.com/kubelab/kubelab/pipeline/admission"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/registry/registrytest"
	"github.com/kubelab/kubelab/server/frontdoor"
)

// A namespace's ResourceQuota is enforced as kube enforces it: a create
// past a hard count is 403 with kube's message and writes nothing;
// status.used follows creates and deletes; an update that grows objects
// past the stored-bytes limit is refused too. Admission (the front door)
// counts each write in; the quota controller, run as the server runs it,
// recounts what is stored.
func TestResourceQuotaCountsAndStoredBytes(t *testing.T) {
	t.Parallel()
	lab := apitest.Start(t, func(c *apitest.Config) { c.Pipeline = true })
	api := lab.API()
	registrytest.Run(t, registry.Controller("resourcequota-controller"),
		resourcequota.New(api.Registry().NamespacedStores(), lab.FrontDoor().Quotas.Unindexed(), frontdoor.Usage{API: api}, nil).Run,
		"github.com/kubelab/kubelab/controller/resourcequota")
	cs := lab.Clientset(t)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "q"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A ConfigMap the namespace holds before its quota, as every
	// namespace holds the root CA's: the controller counts it in.
	if _, err := cs.CoreV1().ConfigMaps("q").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "small"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
		"count/configmaps": resource.MustParse("3"), admission.StoredBytes: resource.MustParse("64Ki"),
	}}}
	if _, err := cs.CoreV1().ResourceQuotas("q").Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	used := func() corev1.ResourceList {
		q, err := cs.CoreV1().ResourceQuotas("q").Get(ctx, "small", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return q.Status.Used
	}
	eventually.Holds(t, "the quota's usage counted", func() (bool, error) {
		n := used()["count/configmaps"]
		return n.Value() == 1, nil
	})
	cm := func(name string, size int) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"d": strings.Repeat("x", size)}}
	}
	for _, name := range []string{"a", "b"} {
		if _, err := cs.CoreV1().ConfigMaps("q").Create(ctx, cm(name, 10), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s within the quota: %v", name, err)
		}
	}
	// Admission counts each create in; the controller, recounting what is
	// stored, may show a create still being stored as not there yet for
	// a moment, as kube's does.
	eventually.Holds(t, "two creates counted", func() (bool, error) {
		n := used()["count/configmaps"]
		return n.Value() == 3, nil
	})
	_, err := cs.CoreV1().ConfigMaps("q").Create(ctx, cm("c", 10), metav1.CreateOptions{})
	want := `configmaps "c" is forbidden: exceeded quota: small, requested: count/configmaps=1, used: count/configmaps=3, limited: count/configmaps=3`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("create past the count:\n got %v\nwant %s", err, want)
	}
	if _, err := cs.CoreV1().ConfigMaps("q").Get(ctx, "c", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused create was written: %v", err)
	}

	// A delete gives the room back: the controller recalculates.
	if err := cs.CoreV1().ConfigMaps("q").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the delete counted out", func() (bool, error) {
		n := used()["count/configmaps"]
		return n.Value() == 2, nil
	})
	if _, err := cs.CoreV1().ConfigMaps("q").Create(ctx, cm("c", 10), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create after a delete: %v", err)
	}

	// Growing an object past the stored bytes is refused as well.
	b, err := cs.CoreV1().ConfigMaps("q").Get(ctx, "b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Data["d"] = strings.Repeat("x", 80<<10)
	_, err = cs.CoreV1().ConfigMaps("q").Update(ctx, b, metav1.UpdateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: small, requested: kubelab.io/stored-bytes=") || !strings.Contains(err.Error(), "limited: kubelab.io/stored-bytes=64Ki") {
		t.Fatalf("an update past the stored bytes: %v", err)
	}
}
