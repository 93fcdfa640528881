package metricsapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ServedForHeader names, in every response, the user the aggregator said
// the request came from.
const ServedForHeader = "Kubelab-Served-For"

var resource = metav1.APIResource{
	Name: "namespacemetrics", SingularName: "namespacemetrics", Kind: "NamespaceMetrics", Verbs: []string{"get", "list"},
}

func (s *Server) handler() http.Handler {
	prefix := "/apis/" + GroupVersion.String()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.trusted(r) {
			writeError(w, apierrors.NewUnauthorized("only the aggregator may call this server"))
			return
		}
		w.Header().Set(ServedForHeader, r.Header.Get("X-Remote-User"))
		if r.Method != http.MethodGet {
			writeError(w, apierrors.NewMethodNotSupported(schema.GroupResource{Group: GroupVersion.Group, Resource: resource.Name}, r.Method))
			return
		}
		if s.docs.serve(w, r) {
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, prefix)
		if !ok {
			writeError(w, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
			return
		}
		parts := strings.Split(strings.Trim(rest, "/"), "/")
		switch {
		case rest == "" || rest == "/":
			write(w, &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: GroupVersion.String(), APIResources: []metav1.APIResource{resource}})
		case len(parts) == 1 && parts[0] == resource.Name:
			s.list(w, r)
		case len(parts) == 2 && parts[0] == resource.Name:
			for _, m := range s.snapshot(r.Context()) {
				if m.Name == parts[1] {
					write(w, &m)
					return
				}
			}
			writeError(w, apierrors.NewNotFound(schema.GroupResource{Group: GroupVersion.Group, Resource: resource.Name}, parts[1]))
		default:
			writeError(w, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
		}
	})
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	items := s.snapshot(r.Context())
	if !strings.Contains(r.Header.Get("Accept"), "as=Table") {
		write(w, &NamespaceMetricsList{TypeMeta: metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "NamespaceMetricsList"}, Items: items})
		return
	}
	// kubectl get asks for a Table.
	t := &metav1.Table{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"},
		ColumnDefinitions: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name"},
			{Name: "Objects", Type: "integer", Description: "Objects stored in the namespace."},
			{Name: "Requests", Type: "integer", Description: "API requests in the namespace in the window."},
			{Name: "Window", Type: "string"},
		},
	}
	for i := range items {
		m := &items[i]
		total := 0
		for _, n := range m.Objects {
			total += n
		}
		pom := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: m.ObjectMeta}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: []any{m.Name, total, m.Requests.Total, m.Window.Duration.String()},
			Object: runtime.RawExtension{Object: pom}})
	}
	write(w, t)
}

func write(w http.ResponseWriter, obj any) {
	body, err := json.Marshal(obj)
	if err != nil {
		writeError(w, apierrors.NewInternalError(fmt.Errorf("encoding: %w", err)))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

func writeError(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.ErrStatus
	st.Kind, st.APIVersion = "Status", "v1"
	body, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	w.Write(body)
}
