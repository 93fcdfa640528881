package server

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubelab/kubelab/pipeline/admission"
	"github.com/kubelab/kubelab/registry"
	"github.com/kubelab/kubelab/server/kubeapi"
)

// StudentQuotaName is the ResourceQuota every student's namespace gets.
const StudentQuotaName = "kubelab-student"

// studentQuotaHard is what a student's namespace may hold: far more than
// the lesson and the labs need (a handful of each), far less than would
// fill etcd for the class. Without it a student could write 1.5 MiB
// objects until etcd's space quota stops every write, everyone's.
var studentQuotaHard = map[string]string{
	"pods": "50", "services": "20", "count/configmaps": "100", "count/secrets": "50",
	"count/serviceaccounts": "20", "count/deployments.apps": "20", "count/replicasets.apps": "50",
	string(admission.StoredBytes): "16Mi",
}

// studentQuota gives namespace its ResourceQuota. It goes through the
// registry like the rest of provisioning; the student's edit role may
// read it but not change it.
func studentQuota(namespace string) registry.Seed {
	body, _ := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ResourceQuota",
		"metadata": map[string]any{"name": StudentQuotaName, "annotations": map[string]string{
			"kubelab.io/why": string(admission.StoredBytes) + " is kubelab's own resource: the bytes the namespace's objects take in etcd",
		}},
		"spec": map[string]any{"hard": studentQuotaHard},
	})
	return registry.Seed{Resource: corev1.SchemeGroupVersion.WithResource("resourcequotas"), Namespace: namespace,
		FieldManager: kubeapi.SeedFieldManager, Manifest: string(body)}
}
