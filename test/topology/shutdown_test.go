package topology

import (
	"fmt"
	"testing"

	"github.com/kubelab/kubelab/storage/storagetest"
)

// TestStopWithReconnectingWatchers stops kubelab with SIGTERM, as `docker
// compose stop` does, while clients watch the way client-go's informers do:
// when the server ends a watch, they open a new one at once. Shutdown ends
// the open watches; a watch opened after that must not hold the shutdown up
// until its timeout, and kubelab must exit cleanly. The window is short, so
// several rounds with many watchers.
func TestStopWithReconnectingWatchers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs kubelab processes")
	}
	kubelabBinary(t)
	eps := storagetest.StartCluster(t, 3).Endpoints()
	const rounds, watchers = 10, 50
	for round := range rounds {
		t.Run(fmt.Sprintf("round%d", round), func(t *testing.T) {
			s := newServer(t, "s", eps)
			startServers(t, s)
			for range watchers {
				startWatch(t, s, "default", 1)
			}
			s.Stop(t)
		})
	}
}
