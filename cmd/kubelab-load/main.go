// Command kubelab-load measures kubelab under load with client-go, against
// a raw etcd baseline measured in the same run on the same etcd: creates/s
// with concurrent writers, watch delivery latency (write acknowledged →
// event received) with many watchers, and the server's memory.
//
//	go run ./cmd/kubelab-load            # writes a Markdown report to stdout
//	go run ./cmd/kubelab-load overload   # sustainable rate, then twice it: 429s and admitted latency
//	go run ./cmd/kubelab-load soak       # a long run with watchers, websockets and compaction
//
// The server is the real kubelab binary, run as a child process, so its
// memory is measured alone and as deployed.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	if len(os.Args) > 1 {
		sub := map[string]func(context.Context, []string, io.Writer) error{"overload": overload, "soak": soak}[os.Args[1]]
		if sub != nil {
			if err := sub(context.Background(), os.Args[2:], os.Stdout); err != nil {
				fmt.Fprintf(os.Stderr, "kubelab-load %s: %v\n", os.Args[1], err)
				os.Exit(1)
			}
			return
		}
	}
	writers := flag.Int("writers", 16, "concurrent writers for the create benchmarks")
	creates := flag.Int("creates", 8000, "creates per create benchmark")
	events := flag.Int("events", 200, "writes observed by the watchers in each watch benchmark")
	rate := flag.Int("rate", 50, "writes per second during the watch benchmarks")
	kubelabBin := flag.String("kubelab", "", "the kubelab binary to measure; empty builds ./cmd/kubelab")
	profileDir := flag.String("profile-dir", "", "if set, save a CPU profile of the server during each watch benchmark here")
	apiserver := flag.String("apiserver", "kubelab", "the core the server runs (kubelab's --apiserver): kubelab or kube")
	reference := flag.String("reference", "", "measure the reference control plane started by its cluster.sh, whose state directory (REF_DIR) this is, instead of kubelab")
	flag.Parse()
	cfg := loadConfig{Writers: *writers, Creates: *creates, Events: *events, Rate: *rate, Watchers: []int{100, 1000}, Kubelab: *kubelabBin, ProfileDir: *profileDir, APIServer: *apiserver, Reference: *reference}
	if err := run(context.Background(), cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kubelab-load:", err)
		os.Exit(1)
	}
}

type loadConfig struct {
	Writers, Creates, Events, Rate int
	Watchers                       []int
	Kubelab                        string
	ProfileDir                     string
	// APIServer is the core the server runs: kubelab or kube.
	APIServer string
	// Reference, if set, is the reference's state directory: it is
	// measured instead of a kubelab.
	Reference string
}
