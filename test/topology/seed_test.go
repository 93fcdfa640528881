package topology

import (
	"fmt"
	"testing"

	"github.com/kubelab/kubelab/storage/storagetest"
)

// TestConcurrentFirstStart starts three kubelab servers at the same moment
// on an empty etcd, as `docker compose up --scale` would: all of them seed
// the lesson's demo at once, and every one must start, with the demo made
// once. Several rounds, since the race is a matter of timing.
func TestConcurrentFirstStart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs kubelab processes")
	}
	kubelabBinary(t)
	for round := range 3 {
		t.Run(fmt.Sprintf("round%d", round), func(t *testing.T) {
			cluster := storagetest.StartCluster(t, 3)
			eps := cluster.Endpoints()
			servers := []*server{newServer(t, "a", eps), newServer(t, "b", eps), newServer(t, "c", eps)}
			startServers(t, servers...)
			checkDemo(t, cluster.Client(t), servers...)
			for _, s := range servers {
				s.Stop(t)
			}
		})
	}
}
