package storage

import (
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Preconditions must hold for an update or delete to go ahead.
type Preconditions struct {
	UID             *types.UID
	ResourceVersion *string
}

// ListOptions select what a list returns, with the API's meaning of each field.
type ListOptions struct {
	Namespace string
	// ResourceVersion "" is a consistent read, "0" any state, "N" not older than N
	// (or exactly N with ResourceVersionMatch Exact).
	ResourceVersion      string
	ResourceVersionMatch metav1.ResourceVersionMatch
	Limit                int64
	Continue             string
	Predicate            Predicate
}

// WatchOptions select what a watch delivers.
type WatchOptions struct {
	Namespace string
	// ResourceVersion "" or "0" starts with a synthetic ADDED per current object;
	// "N" delivers only changes after N.
	ResourceVersion      string
	ResourceVersionMatch metav1.ResourceVersionMatch
	// SendInitialEvents (with ResourceVersionMatch NotOlderThan) sends the
	// current objects, then a BOOKMARK annotated k8s.io/initial-events-end.
	SendInitialEvents   *bool
	AllowWatchBookmarks bool
	Predicate           Predicate
	// Deadline is when the watch will be closed; a bookmark goes out shortly before.
	Deadline time.Time
}

// AttrFunc returns the labels and fields a selector can match on.
type AttrFunc func(obj runtime.Object) (labels.Set, fields.Set, error)

// Predicate is a label and field selector over objects.
type Predicate struct {
	Label labels.Selector
	Field fields.Selector
}

// Empty reports whether the predicate matches everything.
func (p Predicate) Empty() bool {
	return (p.Label == nil || p.Label.Empty()) && (p.Field == nil || p.Field.Empty())
}

// Matches reports whether an object with these labels and fields is selected.
func (p Predicate) Matches(l labels.Set, f fields.Set) bool {
	if p.Label != nil && !p.Label.Empty() && !p.Label.Matches(l) {
		return false
	}
	if p.Field != nil && !p.Field.Empty() && !p.Field.Matches(f) {
		return false
	}
	return true
}

// ListResult is one page of a list.
type ListResult struct {
	Items []runtime.Object
	// ResourceVersion is the etcd revision the list was read at.
	ResourceVersion    int64
	Continue           string
	RemainingItemCount *int64
}

// ParseResourceVersion reads a resourceVersion parameter: "" is 0, anything
// else must be a non-negative integer (an etcd revision).
func ParseResourceVersion(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	rv, err := strconv.ParseInt(s, 10, 64)
	if err != nil || rv < 0 {
		return 0, InvalidRequest("invalid resource version: " + strconv.Quote(s))
	}
	return rv, nil
}

// ValidateWatch checks a watch's options as kube-apiserver does, whoever
// serves it (the watch cache or etcd), and returns its resourceVersion.
// sendInitialEvents without allowWatchBookmarks is allowed, as in kube 1.37:
// the initial events then come without the bookmark that ends them.
func ValidateWatch(opts WatchOptions) (int64, error) {
	rv, err := ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return 0, err
	}
	if opts.SendInitialEvents != nil {
		if opts.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
			return 0, InvalidRequest("sendInitialEvents requires resourceVersionMatch=NotOlderThan")
		}
	} else if opts.ResourceVersionMatch != "" {
		return 0, InvalidRequest("resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")
	}
	return rv, nil
}

// InvalidRequest is the error for options that make no sense together.
func InvalidRequest(msg string) error { return &Error{Code: CodeInvalidRequest, Message: msg} }
