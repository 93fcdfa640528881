// Package topology runs the topology docker-compose.yml describes, with
// processes instead of containers: a 3-member etcd cluster on loopback and
// kubelab server processes built from ./cmd/kubelab, pointed at it.
package topology

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kubelab/kubelab/internal/kubelabproc"
	"github.com/kubelab/kubelab/storage/embedetcd"
	"github.com/kubelab/kubelab/storage/storagetest"
)

// wait bounds every wait in these tests.
const wait = kubelabproc.Wait

// server is one kubelab process over the cluster.
type server = kubelabproc.Server

func kubelabBinary(t *testing.T) string { return kubelabproc.Binary(t) }

// TestMain removes the binary kubelabBinary built.
func TestMain(m *testing.M) {
	code := m.Run()
	kubelabproc.RemoveBinary()
	os.Exit(code)
}

func newServer(t *testing.T, name string, endpoints []string) *server {
	t.Helper()
	return kubelabproc.New(t, name, "--etcd-endpoints", strings.Join(endpoints, ","))
}

// startServers starts the servers at once, as docker compose does, and waits
// until every one is ready.
func startServers(t *testing.T, servers ...*server) {
	t.Helper()
	kubelabproc.StartAll(t, servers...)
}

// restartMembers starts the stopped members i... again on their data, at
// once, since a member waits for a quorum before it is ready.
func restartMembers(t *testing.T, c *storagetest.Cluster, idx ...int) {
	t.Helper()
	errs := make(chan error, len(idx))
	for _, i := range idx {
		go func() {
			cfg := c.Configs[i]
			cfg.StartTimeout = wait
			m, err := embedetcd.Start(cfg)
			if err == nil {
				c.Members[i] = m
			}
			errs <- err
		}()
	}
	var all []error
	for range idx {
		all = append(all, <-errs)
	}
	if err := errors.Join(all...); err != nil {
		t.Fatalf("restart etcd members %v: %v", idx, err)
	}
}
