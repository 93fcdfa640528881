package labhttp

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/classroom"
	labstore "github.com/kubelab/kubelab/labs/etcdstore"
	quizstore "github.com/kubelab/kubelab/quiz/etcdstore"
)

// classPrefixes are the etcd keys whose changes the dashboards show: a
// student joining, lab progress, a quiz attempt issued or submitted. They
// are followed in etcd, not in this process, so that a dashboard sees
// what a student did on any replica sharing the etcd.
var classPrefixes = []string{classroom.StudentPrefix, labstore.Prefix, quizstore.Prefix}

// followRetry is how long a watch that ended waits before it is opened again.
const followRetry = time.Second

// followClass calls changed after every change under classPrefixes, until
// ctx ends. Dashboards coalesce the calls into one snapshot per burst.
func followClass(ctx context.Context, cli *clientv3.Client, changed func()) {
	for _, prefix := range classPrefixes {
		go follow(ctx, cli, prefix, changed)
	}
}

func follow(ctx context.Context, cli *clientv3.Client, prefix string, changed func()) {
	for ctx.Err() == nil {
		// A watch ends when etcd compacts past it or the leader is lost:
		// open it again from now, and refresh, since events may be missed.
		for resp := range cli.Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix()) {
			if resp.Err() != nil {
				break
			}
			if len(resp.Events) > 0 {
				changed()
			}
		}
		changed()
		select {
		case <-ctx.Done():
		case <-time.After(followRetry):
		}
	}
}
