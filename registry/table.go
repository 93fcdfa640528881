package registry

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

var nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name",
	Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}

func ageColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
}

func column(name, typ, description string, priority int32) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: description, Priority: priority}
}

// defaultTable is NAME and AGE, kube-apiserver's table for kinds without printers.
var defaultTable = &TableSpec{
	Columns: []metav1.TableColumnDefinition{ageColumn()},
	Cells:   func(obj runtime.Object, now time.Time) []any { return []any{age(obj, now)} },
}

// ConvertToTable converts objects to a Table with the resource's columns,
// as kube's rest.TableConvertor; each row carries the object's metadata,
// as kube-apiserver's includeObject=Metadata.
func (r *Resource) ConvertToTable(objs []runtime.Object, listMeta metav1.ListMeta, includeObject metav1.IncludeObjectPolicy, noHeaders bool) (*metav1.Table, error) {
	spec := r.Table
	if spec == nil {
		spec = defaultTable
	}
	t := &metav1.Table{ListMeta: listMeta}
	if !noHeaders {
		t.ColumnDefinitions = append([]metav1.TableColumnDefinition{nameColumn}, spec.Columns...)
	}
	now := time.Now()
	for _, obj := range objs {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		row := metav1.TableRow{Cells: append([]any{m.GetName()}, spec.Cells(obj, now)...)}
		switch includeObject {
		case metav1.IncludeObject:
			row.Object.Object = obj
		case metav1.IncludeNone:
		default:
			pom := meta.AsPartialObjectMetadata(m)
			pom.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata"))
			row.Object.Object = pom
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

func age(obj runtime.Object, now time.Time) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "<unknown>"
	}
	return since(m.GetCreationTimestamp(), now)
}

func since(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

var podTable = &TableSpec{
	Columns: []metav1.TableColumnDefinition{
		column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic.", 0),
		column("Status", "string", "The aggregate status of the containers in this pod.", 0),
		column("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.", 0),
		ageColumn(),
		column("IP", "string", corev1.PodStatus{}.SwaggerDoc()["podIP"], 1),
		column("Node", "string", corev1.PodSpec{}.SwaggerDoc()["nodeName"], 1),
		column("Nominated Node", "string", corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"], 1),
		column("Readiness Gates", "string", corev1.PodSpec{}.SwaggerDoc()["readinessGates"], 1),
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		pod := obj.(*corev1.Pod)
		ready, restarts := 0, int64(0)
		for _, cs := range pod.Status.ContainerStatuses {
			restarts += int64(cs.RestartCount)
			if cs.Ready {
				ready++
			}
		}
		gates := "<none>"
		if n := len(pod.Spec.ReadinessGates); n > 0 {
			gates = fmt.Sprintf("0/%d", n)
		}
		return []any{
			fmt.Sprintf("%d/%d", ready, len(pod.Spec.Containers)), podStatus(pod), restarts, age(pod, now),
			orNone(pod.Status.PodIP), orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), gates,
		}
	},
}

// podStatus is the STATUS column: the most telling reason, as kubectl shows it.
func podStatus(pod *corev1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return "Terminating"
	}
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, cs := range pod.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			reason = cs.State.Waiting.Reason
		case cs.State.Terminated != nil && cs.State.Terminated.Reason != "":
			reason = cs.State.Terminated.Reason
		}
	}
	return reason
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

var namespaceTable = &TableSpec{
	Columns: []metav1.TableColumnDefinition{column("Status", "string", "The status of the namespace", 0), ageColumn()},
	Cells: func(obj runtime.Object, now time.Time) []any {
		return []any{string(obj.(*corev1.Namespace).Status.Phase), age(obj, now)}
	},
}

var configMapTable = &TableSpec{
	Columns: []metav1.TableColumnDefinition{column("Data", "integer", corev1.ConfigMap{}.SwaggerDoc()["data"], 0), ageColumn()},
	Cells: func(obj runtime.Object, now time.Time) []any {
		cm := obj.(*corev1.ConfigMap)
		return []any{int64(len(cm.Data) + len(cm.BinaryData)), age(obj, now)}
	},
}

var secretTable = &TableSpec{
	Columns: []metav1.TableColumnDefinition{
		column("Type", "string", corev1.Secret{}.SwaggerDoc()["type"], 0),
		column("Data", "string", corev1.Secret{}.SwaggerDoc()["data"], 0), ageColumn(),
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		s := obj.(*corev1.Secret)
		return []any{string(s.Type), int64(len(s.Data)), age(obj, now)}
	},
}

var serviceAccountTable = &TableSpec{
	Columns: []metav1.TableColumnDefinition{column("Secrets", "string", corev1.ServiceAccount{}.SwaggerDoc()["secrets"], 0), ageColumn()},
	Cells: func(obj runtime.Object, now time.Time) []any {
		return []any{int64(len(obj.(*corev1.ServiceAccount).Secrets)), age(obj, now)}
	},
}

var eventTable = &TableSpec{
	Columns: []metav1.TableColumnDefinition{
		column("Last Seen", "string", corev1.Event{}.SwaggerDoc()["lastTimestamp"], 0),
		column("Type", "string", corev1.Event{}.SwaggerDoc()["type"], 0),
		column("Reason", "string", corev1.Event{}.SwaggerDoc()["reason"], 0),
		column("Object", "string", corev1.Event{}.SwaggerDoc()["involvedObject"], 0),
		column("Message", "string", corev1.Event{}.SwaggerDoc()["message"], 0),
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		e := obj.(*corev1.Event)
		last := e.LastTimestamp
		if last.IsZero() {
			last = metav1.NewTime(e.EventTime.Time)
		}
		object := strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name
		return []any{since(last, now), e.Type, e.Reason, object, strings.TrimSpace(e.Message)}
	},
}

var roleTable = &TableSpec{
	Columns: []metav1.TableColumnDefinition{column("Created At", "date", metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"], 0)},
	Cells: func(obj runtime.Object, _ time.Time) []any {
		m, _ := meta.Accessor(obj)
		return []any{m.GetCreationTimestamp().UTC().Format(time.RFC3339)}
	},
}

var roleBindingTable = &TableSpec{
	Columns: []metav1.TableColumnDefinition{
		column("Role", "string", rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"], 0), ageColumn(),
		column("Users", "string", "Users in the roleBinding", 1),
		column("Groups", "string", "Groups in the roleBinding", 1),
		column("ServiceAccounts", "string", "ServiceAccounts in the roleBinding", 1),
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		var ref rbacv1.RoleRef
		var subjects []rbacv1.Subject
		switch b := obj.(type) {
		case *rbacv1.RoleBinding:
			ref, subjects = b.RoleRef, b.Subjects
		case *rbacv1.ClusterRoleBinding:
			ref, subjects = b.RoleRef, b.Subjects
		}
		var users, groups, sas []string
		for _, s := range subjects {
			switch s.Kind {
			case rbacv1.UserKind:
				users = append(users, s.Name)
			case rbacv1.GroupKind:
				groups = append(groups, s.Name)
			case rbacv1.ServiceAccountKind:
				sas = append(sas, s.Namespace+"/"+s.Name)
			}
		}
		return []any{ref.Kind + "/" + ref.Name, age(obj, now), strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
	},
}

var nodeTable = &TableSpec{
	Columns: []metav1.TableColumnDefinition{
		column("Status", "string", "The status of the node", 0),
		column("Roles", "string", "The roles of the node", 0),
		ageColumn(),
		column("Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"], 0),
		column("Internal-IP", "string", "The internal IP of the node", 1),
		column("External-IP", "string", "The external IP of the node", 1),
		column("OS-Image", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"], 1),
		column("Kernel-Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"], 1),
		column("Container-Runtime", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"], 1),
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		n := obj.(*corev1.Node)
		status := "Unknown"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				status = map[corev1.ConditionStatus]string{corev1.ConditionTrue: "Ready", corev1.ConditionFalse: "NotReady"}[c.Status]
				if status == "" {
					status = "Unknown"
				}
			}
		}
		if n.Spec.Unschedulable {
			status += ",SchedulingDisabled"
		}
		var roles []string
		for k := range n.Labels {
			if r, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok {
				roles = append(roles, r)
			}
		}
		sort.Strings(roles)
		roleCell := "<none>"
		if len(roles) > 0 {
			roleCell = strings.Join(roles, ",")
		}
		internal, external := "<none>", "<none>"
		for _, a := range n.Status.Addresses {
			switch a.Type {
			case corev1.NodeInternalIP:
				internal = a.Address
			case corev1.NodeExternalIP:
				external = a.Address
			}
		}
		info := n.Status.NodeInfo
		return []any{status, roleCell, age(n, now), info.KubeletVersion, internal, external, info.OSImage, info.KernelVersion, info.ContainerRuntimeVersion}
	},
}
