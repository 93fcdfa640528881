package etcd3_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubelab/kubelab/storage"
	"github.com/kubelab/kubelab/storage/etcd3"
	"github.com/kubelab/kubelab/storage/storagetest"
)

func names(items []runtime.Object) []string {
	var out []string
	for _, o := range items {
		out = append(out, o.(*corev1.Pod).Name)
	}
	return out
}

func TestListResourceVersionSemantics(t *testing.T) {
	etcd := storagetest.StartEtcd(t)
	s := newPodStore(t, etcd.Client())
	first := mustCreate(t, s, newPod("ns", "a", nil))
	mustCreate(t, s, newPod("ns", "b", nil))
	current := mustCreate(t, s, newPod("ns", "c", nil))

	t.Run("ConsistentReadIsAtTheLatestRevision", func(t *testing.T) {
		res, err := s.List(ctxT(t), storage.ListOptions{Namespace: "ns"})
		if err != nil {
			t.Fatal(err)
		}
		if res.ResourceVersion != rvOf(t, current) || len(res.Items) != 3 {
			t.Fatalf("list rv %d with %v, want rv %d and three pods", res.ResourceVersion, names(res.Items), rvOf(t, current))
		}
	})
	t.Run("ExactReadsThePast", func(t *testing.T) {
		res, err := s.List(ctxT(t), storage.ListOptions{Namespace: "ns", ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(res.Items); len(got) != 1 || got[0] != "a" || res.ResourceVersion != rvOf(t, first) {
			t.Fatalf("exact list at %s: %v at rv %d", first.ResourceVersion, got, res.ResourceVersion)
		}
	})
	t.Run("NotOlderThan", func(t *testing.T) {
		res, err := s.List(ctxT(t), storage.ListOptions{Namespace: "ns", ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		if err != nil || len(res.Items) != 3 {
			t.Fatalf("%v %v", err, res)
		}
	})
	t.Run("ErrTooLarge", func(t *testing.T) {
		for _, match := range []metav1.ResourceVersionMatch{"", metav1.ResourceVersionMatchNotOlderThan, metav1.ResourceVersionMatchExact} {
			_, err := s.List(ctxT(t), storage.ListOptions{ResourceVersion: "100000", ResourceVersionMatch: match})
			if !storage.IsCode(err, storage.CodeTooLargeResourceVersion) || !apierrors.IsTimeout(err) {
				t.Fatalf("match %q: err = %v", match, err)
			}
			want := fmt.Sprintf("Timeout: Too large resource version: 100000, current: %d", rvOf(t, current))
			if err.Error() != want {
				t.Fatalf("match %q: %q, want %q", match, err, want)
			}
		}
	})
	t.Run("ErrInvalidOptions", func(t *testing.T) {
		for _, o := range []storage.ListOptions{
			{ResourceVersion: "abc"},
			{ResourceVersion: "-1"},
			{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			{ResourceVersion: "5", ResourceVersionMatch: "Sometimes"},
			{Continue: "not-a-token"},
			{Namespace: "a/b"},
		} {
			if _, err := s.List(ctxT(t), o); !apierrors.IsBadRequest(err) {
				t.Errorf("%+v: err = %v, want BadRequest", o, err)
			}
		}
	})
	t.Run("ErrExactCompacted", func(t *testing.T) {
		if _, err := etcd3.NewCompactor(etcd.Client(), quietLogger()).CompactNow(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		_, err := s.List(ctxT(t), storage.ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if !apierrors.IsResourceExpired(err) || apierrors.APIStatus(err.(*storage.Error)).Status().Code != 410 {
			t.Fatalf("exact list at a compacted revision: %v", err)
		}
	})
}

func TestListPagesWithKubeContinueTokens(t *testing.T) {
	etcd := storagetest.StartEtcd(t)
	s := newPodStore(t, etcd.Client())
	for i := range 7 {
		mustCreate(t, s, newPod("ns", fmt.Sprintf("p%d", i), map[string]string{"even": strconv.FormatBool(i%2 == 0)}))
	}
	mustCreate(t, s, newPod("ns-other", "elsewhere", nil))

	var all []string
	var listRV int64
	opts := storage.ListOptions{Namespace: "ns", Limit: 3}
	for page := 0; ; page++ {
		res, err := s.List(ctxT(t), opts)
		if err != nil {
			t.Fatal(err)
		}
		if page == 0 {
			listRV = res.ResourceVersion
			// A write between pages must not show up: pages read one revision.
			mustCreate(t, s, newPod("ns", "p99-late", nil))
		} else if res.ResourceVersion != listRV {
			t.Fatalf("page %d read rv %d, first page %d", page, res.ResourceVersion, listRV)
		}
		all = append(all, names(res.Items)...)
		if res.Continue == "" {
			if res.RemainingItemCount != nil {
				t.Fatal("last page has remainingItemCount")
			}
			break
		}
		if res.RemainingItemCount == nil || *res.RemainingItemCount != int64(7-len(all)) {
			t.Fatalf("page %d remainingItemCount %v, want %d", page, res.RemainingItemCount, 7-len(all))
		}
		if page == 0 {
			raw, err := base64.RawURLEncoding.DecodeString(res.Continue)
			if err != nil {
				t.Fatal(err)
			}
			var tok map[string]any
			if err := json.Unmarshal(raw, &tok); err != nil {
				t.Fatal(err)
			}
			if tok["v"] != "meta.k8s.io/v1" || tok["start"] != "p2\x00" || tok["rv"] != float64(listRV) {
				t.Fatalf("continue token %s, want kube-apiserver's format", raw)
			}
		}
		opts.Continue = res.Continue
	}
	if fmt.Sprint(all) != "[p0 p1 p2 p3 p4 p5 p6]" {
		t.Fatalf("pages gave %v", all)
	}

	t.Run("LimitWithSelectorFillsPages", func(t *testing.T) {
		sel := labels.SelectorFromSet(labels.Set{"even": "true"})
		res, err := s.List(ctxT(t), storage.ListOptions{Namespace: "ns", Limit: 2, Predicate: storage.Predicate{Label: sel}})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(names(res.Items)) != "[p0 p2]" || res.Continue == "" || res.RemainingItemCount != nil {
			t.Fatalf("got %v continue=%q remaining=%v", names(res.Items), res.Continue, res.RemainingItemCount)
		}
		res, err = s.List(ctxT(t), storage.ListOptions{Namespace: "ns", Limit: 2, Continue: res.Continue, Predicate: storage.Predicate{Label: sel}})
		if err != nil || fmt.Sprint(names(res.Items)) != "[p4 p6]" {
			t.Fatalf("second page %v %v", err, names(res.Items))
		}
	})
	t.Run("FieldSelector", func(t *testing.T) {
		res, err := s.List(ctxT(t), storage.ListOptions{Predicate: storage.Predicate{Field: fields.OneTermEqualSelector("metadata.name", "elsewhere")}})
		if err != nil || fmt.Sprint(names(res.Items)) != "[elsewhere]" {
			t.Fatalf("%v %v", err, names(res.Items))
		}
	})
	t.Run("NamespaceIsAPathSegment", func(t *testing.T) {
		mustCreate(t, s, newPod("n", "not-in-ns", nil))
		res, err := s.List(ctxT(t), storage.ListOptions{Namespace: "n"})
		if err != nil || fmt.Sprint(names(res.Items)) != "[not-in-ns]" {
			t.Fatalf("%v %v", err, names(res.Items))
		}
	})
	t.Run("ErrContinueOutsideItsPrefix", func(t *testing.T) {
		tok := base64.RawURLEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v1","rv":5,"start":"../ns-other/"}`))
		_, err := s.List(ctxT(t), storage.ListOptions{Namespace: "ns", Continue: tok})
		if !apierrors.IsBadRequest(err) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrContinueWithResourceVersion", func(t *testing.T) {
		res, _ := s.List(ctxT(t), storage.ListOptions{Namespace: "ns", Limit: 1})
		_, err := s.List(ctxT(t), storage.ListOptions{Namespace: "ns", Continue: res.Continue, ResourceVersion: "5"})
		if !apierrors.IsBadRequest(err) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrContinueCompacted", func(t *testing.T) {
		res, err := s.List(ctxT(t), storage.ListOptions{Namespace: "ns", Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		mustCreate(t, s, newPod("ns", "p98-after-first-page", nil))
		if _, err := etcd3.NewCompactor(etcd.Client(), quietLogger()).CompactNow(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		_, err = s.List(ctxT(t), storage.ListOptions{Namespace: "ns", Limit: 2, Continue: res.Continue})
		if !apierrors.IsResourceExpired(err) {
			t.Fatalf("err = %v", err)
		}
		st := err.(*storage.Error).Status()
		if st.Code != 410 || st.ListMeta.Continue == "" || st.Message[:44] != "The provided continue parameter is too old t" {
			t.Fatalf("status %+v", st)
		}
		// The offered token carries on, at the latest revision.
		res, err = s.List(ctxT(t), storage.ListOptions{Namespace: "ns", Continue: st.ListMeta.Continue})
		if err != nil || fmt.Sprint(names(res.Items)) != "[p2 p3 p4 p5 p6 p98-after-first-page p99-late]" {
			t.Fatalf("inconsistent continuation: %v %v", err, names(res.Items))
		}
	})
}
