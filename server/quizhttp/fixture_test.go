package quizhttp_test

import (
	"log/slog"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/internal/apitest"
	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/quiz"
	"github.com/kubelab/kubelab/quiz/etcdstore"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/quizhttp"
	"github.com/kubelab/kubelab/web"
)

// served is a kubelab the tests drive over HTTP as its users: the API
// behind the front door with the quizzes on it (startQuiz), or a whole
// kubelab (kubelabtest) for classroom mode, signing in, the static
// tokens and the pages other packages serve.
type served interface {
	URL() string
	EtcdClient() *clientv3.Client
	// Authenticator mints the tokens of the users a test acts as.
	Authenticator() *authn.Authenticator
}

// quizAPI is the API behind kubelab's front door in local mode, with the
// quizzes installed on its router.
type quizAPI struct{ *apitest.Server }

func (q quizAPI) Authenticator() *authn.Authenticator { return q.FrontDoor().Authn }

// startQuiz serves the API behind kubelab's front door in local mode
// (tokens, RBAC, anonymous requests as the local user), without the
// lesson's demo namespace, which no quiz reads, and installs the
// quizzes on the same router as the whole server does (its installAPI):
// attempts kept in the API's etcd, pages in the site's layout of the quiz
// section, under policy. The whole server also counts the attempts stored
// for /metrics, by wrapping this same store, and gives the grader the
// display names of a class's students, of which local mode has none.
func startQuiz(t *testing.T, policy quiz.Policy, options ...func(*apitest.Config)) quizAPI {
	t.Helper()
	api := apitest.Start(t, append([]func(*apitest.Config){func(c *apitest.Config) { c.Pipeline, c.NoDemo = true, true }}, options...)...)
	err := quizhttp.Install(api.Echo(), quizhttp.Config{Store: etcdstore.New(api.EtcdClient()), Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
		Layout: web.SectionPage("quiz"), Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	return quizAPI{api}
}

// policyOf is the quizzes' policy of a server configured by options, as
// the server reads it from its Config: by default, its flags' defaults.
func policyOf(options ...func(*server.Config)) quiz.Policy {
	c := server.DefaultConfig()
	for _, o := range options {
		o(&c)
	}
	return quiz.Policy{Attempts: c.QuizAttempts, Reveal: quiz.Reveal(c.QuizReveal), ClosesAt: c.QuizClosesAt}
}
