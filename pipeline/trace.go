package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Stage names one step of the request pipeline, in the lesson's order.
type Stage string

// The stages, in the order a request meets them.
const (
	StageAuthentication      Stage = "authentication"
	StageAuthorization       Stage = "authorization"
	StageMutatingAdmission   Stage = "mutating-admission"
	StageValidation          Stage = "validation"
	StageValidatingAdmission Stage = "validating-admission"
	StageStorage             Stage = "storage"
	StageWatch               Stage = "watch"
)

// Stages lists every stage in pipeline order, for views that draw them all.
var Stages = []Stage{StageAuthentication, StageAuthorization, StageMutatingAdmission,
	StageValidation, StageValidatingAdmission, StageStorage, StageWatch}

// Decision is what a stage (or one plugin of it) did with the request.
type Decision string

// The decisions a record can carry.
const (
	Allow  Decision = "allow"
	Deny   Decision = "deny"
	Mutate Decision = "mutate"
	Error  Decision = "error"
)

// Record is one stage's (or one admission plugin's) part in a request.
type Record struct {
	Stage    Stage    `json:"stage"`
	Plugin   string   `json:"plugin,omitempty"`
	Decision Decision `json:"decision"`
	Reason   string   `json:"reason,omitempty"`
	// Duration is in nanoseconds on the wire.
	Duration time.Duration `json:"duration"`
	// Patch is the RFC 6902 JSON patch a mutating plugin applied.
	Patch json.RawMessage `json:"patch,omitempty"`
	// ResourceVersion is what the storage stage wrote (or read).
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// Trace is one request's way through the pipeline. A Trace is built by one
// goroutine; once published it is shared and must not be modified.
type Trace struct {
	// ID is returned to the client in the TraceHeader response header.
	ID   string    `json:"id"`
	Time time.Time `json:"time"`
	// User is who sent the request (whose tracer shows it); As is the
	// user it was served as, when it asked to impersonate one (kubectl --as).
	User        string   `json:"user"`
	As          string   `json:"as,omitempty"`
	Verb        string   `json:"verb"`
	APIGroup    string   `json:"apiGroup,omitempty"`
	Resource    string   `json:"resource,omitempty"`
	Subresource string   `json:"subresource,omitempty"`
	Namespace   string   `json:"namespace,omitempty"`
	Name        string   `json:"name,omitempty"`
	Path        string   `json:"path"`
	Records     []Record `json:"records"`
	// Code is the HTTP status the client got.
	Code int `json:"code"`
	// Duration is the request's whole time, from its arrival to its
	// answer (a watch's, to its end).
	Duration time.Duration `json:"duration,omitempty"`
	// Source names the kubelab view that sent the request on the user's
	// behalf (the watch timeline's lanes, the inspector's access check,
	// a Run it live button...); empty for the user's own clients. Labs
	// count a view's requests only for the steps that name it.
	Source string `json:"source,omitempty"`
}

// TraceHeader carries a request's trace ID back to the client. It is the
// header kube-apiserver sets to the request's audit ID, so `kubectl -v=8`
// shows it in the same place a real cluster's ID appears.
const TraceHeader = "Audit-Id"

// NewTraceID returns a random (version 4) UUID, the form of kube's audit IDs.
func NewTraceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}

// NewTrace starts the trace of a request that arrived now.
func NewTrace(r *http.Request) *Trace {
	// Room for one record per stage and plugin, so appends do not regrow.
	return &Trace{ID: NewTraceID(), Time: time.Now(), Path: r.URL.Path, Verb: r.Method, Records: make([]Record, 0, 8),
		Source: SourceFrom(r.Context())}
}

// The views of kubelab's pages that send API requests on a user's behalf,
// as a trace's Source names them.
const (
	// ViewTimeline is the watch timeline: its lanes' lists and watches
	// (sent by themselves once the page is open) and its buttons.
	ViewTimeline = "timeline"
	// ViewRunItLive is a lesson's Run it live button, which the student
	// presses to send a command's requests.
	ViewRunItLive = "run-it-live"
	// ViewPollVsWatch is the poll-versus-watch race.
	ViewPollVsWatch = "poll-vs-watch"
	// ViewInspector is the etcd inspector, whose access check asks the
	// API what the user may read.
	ViewInspector = "inspector"
	// ViewWeb is any other request a page makes for the user.
	ViewWeb = "web"
)

type sourceKey struct{}

// WithSource marks a request made in-process by one of kubelab's views
// on a user's behalf. It is a context value, not a header, so that no
// client can claim to be a view, or hide that it is one.
func WithSource(ctx context.Context, view string) context.Context {
	return context.WithValue(ctx, sourceKey{}, view)
}

// SourceFrom is the view WithSource named, or "" for a request from the
// user's own client.
func SourceFrom(ctx context.Context) string {
	s, _ := ctx.Value(sourceKey{}).(string)
	return s
}

// Describe copies what the attributes say about the request into the trace.
func (t *Trace) Describe(a *Attributes) {
	if t.As == "" {
		t.User = a.User.Name
	}
	t.Verb = a.Verb
	t.APIGroup, t.Resource, t.Subresource = a.APIGroup, a.Resource, a.Subresource
	t.Namespace, t.Name = a.Namespace, a.Name
	if a.Path != "" {
		t.Path = a.Path
	}
}

// Add appends a record.
func (t *Trace) Add(r ...Record) { t.Records = append(t.Records, r...) }

// Mark is the number of records so far; Rewind(mark) drops the records a
// retried step (an update's conflict retry) added since.
func (t *Trace) Mark() int { return len(t.Records) }

// Rewind drops every record after mark.
func (t *Trace) Rewind(mark int) {
	if mark >= 0 && mark < len(t.Records) {
		t.Records = t.Records[:mark]
	}
}

// Run times f as one stage, records its outcome (see DecisionFor) and
// returns f's error unchanged.
func (t *Trace) Run(stage Stage, plugin string, f func() error) error {
	sw := StartStage(stage, plugin)
	err := f()
	t.Add(sw.Done(err))
	return err
}

// Last is the most recent record, for adding what only the caller knows
// (a resourceVersion); nil if there is none.
func (t *Trace) Last() *Record {
	if len(t.Records) == 0 {
		return nil
	}
	return &t.Records[len(t.Records)-1]
}

// Stopwatch times one stage.
type Stopwatch struct {
	stage  Stage
	plugin string
	start  time.Time
}

// StartStage starts timing a stage (and plugin, for admission).
func StartStage(stage Stage, plugin string) Stopwatch {
	return Stopwatch{stage: stage, plugin: plugin, start: time.Now()}
}

// Done is the stage's record: allow for nil, else as DecisionFor says,
// with the error's message as the reason.
func (s Stopwatch) Done(err error) Record {
	r := s.Record(Allow, "")
	if err != nil {
		r.Decision, r.Reason = DecisionFor(err), err.Error()
	}
	return r
}

// Record is the stage's record with the given decision and reason.
func (s Stopwatch) Record(d Decision, reason string) Record {
	return Record{Stage: s.stage, Plugin: s.plugin, Decision: d, Reason: reason, Duration: time.Since(s.start)}
}

// DecisionFor classifies an error that ended a stage: a Status error
// below 500 (forbidden, not found, invalid, conflict...) is the stage
// saying no, anything else is the stage failing.
func DecisionFor(err error) Decision {
	if err == nil {
		return Allow
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		if code := st.Status().Code; code >= 400 && code < 500 {
			return Deny
		}
	}
	return Error
}
