package storage

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Code says what went wrong in storage, independent of HTTP.
type Code int

// The storage error vocabulary. Each maps to exactly one Kubernetes Status in Error.Status.
const (
	// CodeNotFound: no object under the key.
	CodeNotFound Code = iota + 1
	// CodeAlreadyExists: create found an object under the key.
	CodeAlreadyExists
	// CodeConflict: a resourceVersion or UID precondition did not hold.
	CodeConflict
	// CodeInvalidKey: a name or namespace cannot form a storage key.
	CodeInvalidKey
	// CodeInvalidRequest: list or watch options that make no sense together.
	CodeInvalidRequest
	// CodeExpired: the requested resourceVersion (or continue token) was compacted away.
	CodeExpired
	// CodeTooLargeResourceVersion: the requested resourceVersion is newer than etcd has.
	CodeTooLargeResourceVersion
	// CodeCorrupt: a value in etcd cannot be decoded.
	CodeCorrupt
	// CodeUnavailable: etcd could not be reached or did not answer in time.
	CodeUnavailable
	// CodeTooLarge: the object, once encoded, is more than etcd takes in one request.
	CodeTooLarge
)

// Error is the one error type storage returns. It satisfies apimachinery's
// APIStatus interface, so apierrors.IsNotFound, ReasonForError and friends
// understand it, and the server renders it as the Status a real API server
// would send.
type Error struct {
	Code     Code
	Resource schema.GroupResource
	Name     string
	Key      string
	// Message is a detail for the codes whose Status message is not fixed.
	Message string
	// Current and Requested are resourceVersions, for Expired and TooLarge.
	Requested, Current int64
	// Continue, on an expired continue token, lets the client carry on
	// inconsistently from where it was, as kube-apiserver offers.
	Continue string
	Err      error
}

func (e *Error) Error() string { return e.Status().Message }

// Unwrap exposes the underlying etcd or codec error, if any.
func (e *Error) Unwrap() error { return e.Err }

// Status is the Kubernetes Status for this error, with kube-apiserver's
// reasons, codes and wording.
func (e *Error) Status() metav1.Status {
	switch e.Code {
	case CodeNotFound:
		return apierrors.NewNotFound(e.Resource, e.Name).ErrStatus
	case CodeAlreadyExists:
		return apierrors.NewAlreadyExists(e.Resource, e.Name).ErrStatus
	case CodeConflict:
		return apierrors.NewConflict(e.Resource, e.Name, fmt.Errorf("%s", e.Message)).ErrStatus
	case CodeInvalidKey, CodeInvalidRequest:
		return apierrors.NewBadRequest(e.Message).ErrStatus
	case CodeExpired:
		st := apierrors.NewResourceExpired(e.Message).ErrStatus
		st.ListMeta.Continue = e.Continue
		return st
	case CodeTooLargeResourceVersion:
		// kube-apiserver's wording and cause; clients retry after a second.
		st := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", e.Requested, e.Current), 1).ErrStatus
		st.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
		return st
	case CodeCorrupt:
		return apierrors.NewInternalError(fmt.Errorf("corrupt object stored at %q: %s", e.Key, e.Message)).ErrStatus
	case CodeUnavailable:
		return apierrors.NewServiceUnavailable(fmt.Sprintf("storage is unavailable: %s", e.Message)).ErrStatus
	case CodeTooLarge:
		return apierrors.NewRequestEntityTooLargeError(e.Message).ErrStatus
	}
	return metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
		Reason: metav1.StatusReasonInternalError, Message: e.Message}
}

// IsCode reports whether err is a storage Error with the given code.
func IsCode(err error, code Code) bool {
	e, ok := err.(*Error)
	if !ok {
		return false
	}
	return e.Code == code
}

// ConflictMessage is kube-apiserver's text for a failed resourceVersion precondition.
const ConflictMessage = "the object has been modified; please apply your changes to the latest version and try again"

// TooOldResourceVersion is the 410 a watch gets when it asks to resume from
// a resourceVersion that is no longer servable: "too old resource version: 1 (999)".
func TooOldResourceVersion(requested, oldest int64) *Error {
	return &Error{Code: CodeExpired, Requested: requested, Current: oldest,
		Message: fmt.Sprintf("too old resource version: %d (%d)", requested, oldest)}
}
