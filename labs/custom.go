package labs

import (
	"context"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/web/i18n"
)

// customResourceCreated passes when the server stored an object the
// student created in their namespace, of a resource a CRD defines.
func customResourceCreated(ctx context.Context, env *Env) (Result, error) {
	for _, t := range reversed(since(env.Traces, env.StepStarted)) {
		if t.Verb != "create" || t.Namespace != env.Namespace || t.APIGroup == "" || t.Subresource != "" || t.Code < 200 || t.Code > 299 {
			continue
		}
		custom, err := env.World.IsCustomResource(ctx, t.APIGroup, t.Resource)
		if err != nil {
			return Result{}, err
		}
		if custom {
			return Result{Passed: true, Evidence: describe(&t).Plus(i18n.Text{EN: "; " + t.Resource + "." + t.APIGroup + " is defined by a CRD", TH: "; " + t.Resource + "." + t.APIGroup + " กำหนดโดย CRD"})}, nil
		}
	}
	return Result{}, nil
}

// jsonBesideProtobuf passes when the etcd inspector read, for the
// student, the key of a custom resource in their namespace during this
// step and a pod's key of their namespace during the lab. The inspector
// reads the object through the API beside the raw value, and that read
// is traced as the inspector's (pipeline.ViewInspector).
func jsonBesideProtobuf(ctx context.Context, env *Env) (Result, error) {
	byInspector := func(t *pipeline.Trace) bool { return t.Source == pipeline.ViewInspector }
	var cr *pipeline.Trace
	for _, t := range reversed(since(env.Traces, env.StepStarted)) {
		if !byInspector(&t) || t.Verb != "get" || t.Namespace != env.Namespace || t.APIGroup == "" || t.Code != 200 {
			continue
		}
		custom, err := env.World.IsCustomResource(ctx, t.APIGroup, t.Resource)
		if err != nil {
			return Result{}, err
		}
		if custom {
			cr = &t
			break
		}
	}
	pod := lastTrace(env, env.LabStarted, byInspector, verb("get"), resource("", "pods"), inNamespace(env.Namespace), code(200, 200))
	switch {
	case cr != nil && pod != nil:
		crName, crAt, podAt := cr.APIGroup+"/"+cr.Resource+"/"+cr.Name, cr.Time.Format("15:04:05"), pod.Time.Format("15:04:05")
		return Result{Passed: true, Evidence: i18n.Text{
			EN: "the inspector read " + crName + " (JSON) at " + crAt + " and pods/" + pod.Name + " (k8s\\x00 protobuf) at " + podAt + " in " + env.Namespace,
			TH: "inspector อ่าน " + crName + " (JSON) เวลา " + crAt + " และ pods/" + pod.Name + " (protobuf ที่ขึ้นต้นด้วย k8s\\x00) เวลา " + podAt + " ใน " + env.Namespace,
		}}, nil
	case cr != nil:
		return Result{Why: i18n.Text{EN: "The inspector read your custom resource's key; now open one of your pods' keys beside it, to see protobuf next to the JSON.",
			TH: "inspector อ่าน key ของ custom resource ของคุณแล้ว ต่อไปให้เปิด key ของ pod ตัวหนึ่งของคุณคู่กัน เพื่อดู protobuf ข้าง ๆ JSON"}}, nil
	}
	return Result{}, nil
}

// reversed is ts newest first.
func reversed(ts []pipeline.Trace) []pipeline.Trace {
	out := make([]pipeline.Trace, len(ts))
	for i, t := range ts {
		out[len(ts)-1-i] = t
	}
	return out
}
