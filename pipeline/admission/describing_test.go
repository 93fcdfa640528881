package admission_test

import (
	"context"
	"encoding/json"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/pipeline/admission"
)

// TestDescribedPatchesAreTheChange: for every plugin that reports its own
// change, applying the reported patch to the pod before the plugin gives
// exactly the pod after it.
func TestDescribedPatchesAreTheChange(t *testing.T) {
	seconds := int64(60)
	pods := map[string]*corev1.Pod{
		"bare": pod("web"),
		"named account": func() *corev1.Pod {
			p := pod("web")
			p.Spec.ServiceAccountName = "builder"
			return p
		}(),
		"deprecated account only": func() *corev1.Pod {
			p := pod("web")
			p.Spec.DeprecatedServiceAccount = "old"
			return p
		}(),
		"own toleration for one key": func() *corev1.Pod {
			p := pod("web")
			p.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds}}
			return p
		}(),
		"tolerates everything": func() *corev1.Pod {
			p := pod("web")
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
			return p
		}(),
	}
	for _, plugin := range []admission.MutatingPlugin{admission.ServiceAccount{}, admission.DefaultTolerationSeconds{}} {
		for name, p := range pods {
			t.Run(plugin.Name()+"/"+name, func(t *testing.T) {
				before, _ := json.Marshal(p)
				a := podAttrs("alice", p.DeepCopy())
				recs, err := (&admission.Chain{Mutating: []admission.MutatingPlugin{plugin}}).Admit(context.Background(), a)
				if err != nil {
					t.Fatal(err)
				}
				patched := before
				if len(recs[0].Patch) > 0 {
					if recs[0].Decision != pipeline.Mutate {
						t.Fatalf("a patch with decision %s", recs[0].Decision)
					}
					patch, err := jsonpatch.DecodePatch(recs[0].Patch)
					if err != nil {
						t.Fatalf("patch %s: %v", recs[0].Patch, err)
					}
					if patched, err = patch.Apply(before); err != nil {
						t.Fatalf("patch %s does not apply: %v", recs[0].Patch, err)
					}
				}
				var got corev1.Pod
				if err := json.Unmarshal(patched, &got); err != nil {
					t.Fatal(err)
				}
				if !equality.Semantic.DeepEqual(&got, a.Object) {
					after, _ := json.Marshal(a.Object)
					t.Fatalf("patch %s\nturns %s\ninto  %s\nnot   %s", recs[0].Patch, before, patched, after)
				}
			})
		}
	}
}

func TestDefaultTolerationSeconds(t *testing.T) {
	a := podAttrs("alice", pod("web"))
	recs, err := (&admission.Chain{Mutating: []admission.MutatingPlugin{admission.DefaultTolerationSeconds{}}}).Admit(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"add","path":"/spec/tolerations","value":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}]}]`
	if string(recs[0].Patch) != want {
		t.Fatalf("patch %s\nwant  %s", recs[0].Patch, want)
	}
	// An update is left alone, as kube's plugin does.
	up := withOp(podAttrs("alice", pod("web")), "update")
	if recs, _ := (&admission.Chain{Mutating: []admission.MutatingPlugin{admission.DefaultTolerationSeconds{}}}).Admit(context.Background(), up); recs[0].Patch != nil {
		t.Fatalf("update patched: %s", recs[0].Patch)
	}
}
