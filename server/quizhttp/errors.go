package quizhttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/quiz"
)

// Group is the API group named in the quiz's Status errors.
const Group = "kubelab.io"

var (
	quizzesResource  = schema.GroupResource{Group: Group, Resource: "quizzes"}
	attemptsResource = schema.GroupResource{Group: Group, Resource: "attempts"}
	submissionKind   = schema.GroupKind{Group: Group, Kind: "QuizSubmission"}
)

// The JSON handlers return these errors; the server's error handler turns
// each into the Kubernetes Status it carries.

func errUnknownQuiz(id string) error { return apierrors.NewNotFound(quizzesResource, id) }

func errUnknownClass(name, ours string) error {
	err := apierrors.NewNotFound(schema.GroupResource{Group: Group, Resource: "classes"}, name)
	if ours != "" {
		err.ErrStatus.Message = fmt.Sprintf("class %q has no attempts here; this kubelab's class is %q", name, ours)
	} else {
		err.ErrStatus.Message = fmt.Sprintf("class %q has no attempts here, and this kubelab runs no named class", name)
	}
	return err
}

func errUnauthorized(path string) error {
	return apierrors.NewUnauthorized(fmt.Sprintf("%s needs a bearer token of an instructor or a grader", path))
}

// errForbidden words it as kube-apiserver words a non-resource denial.
func errForbidden(u pipeline.User, verb, path, why string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
		Message: fmt.Sprintf("forbidden: User %q cannot %s path %q: %s", u.Name, verb, path, why),
	}}
}

// errInvalid lists a submission's problems as field errors, as
// kube-apiserver lists an invalid object's.
func errInvalid(quizID string, inv *quiz.InvalidError) error {
	var errs field.ErrorList
	for _, p := range inv.Problems {
		path := field.NewPath(p.Field)
		switch p.Type {
		case quiz.ProblemNotFound:
			errs = append(errs, &field.Error{Type: field.ErrorTypeNotFound, Field: path.String(), BadValue: p.Value, Detail: p.Detail})
		case quiz.ProblemDuplicate:
			errs = append(errs, &field.Error{Type: field.ErrorTypeDuplicate, Field: path.String(), BadValue: p.Value, Detail: p.Detail})
		case quiz.ProblemRequired:
			errs = append(errs, field.Required(path, p.Detail))
		default:
			errs = append(errs, field.Invalid(path, p.Value, p.Detail))
		}
	}
	return apierrors.NewInvalid(submissionKind, quizID, errs)
}

// readBody reads at most MaxBodyBytes of the request body.
func readBody(c echo.Context) ([]byte, error) {
	r := c.Request()
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("a submission is at most %d bytes", MaxBodyBytes))
	}
	if err != nil {
		return nil, apierrors.NewBadRequest("reading the request body: " + err.Error())
	}
	return body, nil
}

// decodeJSON decodes exactly one JSON value into v, refusing unknown
// fields, so a typo in a field name is an error rather than an empty answer.
func decodeJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return apierrors.NewBadRequest("the body is not a valid submission: " + err.Error())
	}
	if _, err := dec.Token(); err != io.EOF {
		return apierrors.NewBadRequest("the body holds more than one JSON value")
	}
	return nil
}

func apiBadRequest(msg string) error { return apierrors.NewBadRequest(msg) }
