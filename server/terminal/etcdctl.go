package terminal

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// EtcdReader is the embedded member as etcdctl's read commands see it.
type EtcdReader interface {
	clientv3.KV
	clientv3.Watcher
	clientv3.Maintenance
	Endpoints() []string
}

var _ EtcdReader = (*clientv3.Client)(nil)

// etcdWrites are etcdctl's commands that change etcd, or its members: the
// terminal's etcdctl reads only. Writes go through the API, so that the
// pipeline, the watch cache and the tracer see them.
var etcdWrites = map[string]bool{"put": true, "del": true, "txn": true, "compaction": true, "defrag": true, "lease": true,
	"member": true, "snapshot": true, "alarm": true, "auth": true, "user": true, "role": true, "lock": true, "elect": true,
	"move-leader": true, "downgrade": true, "make-mirror": true, "migrate": true, "check": true}

// runEtcdctl runs etcdctl's read commands against the member, in process,
// printing as etcdctl's simple and JSON writers do: get, watch and
// endpoint status. Local mode only (see Terminal.run).
func runEtcdctl(ctx context.Context, etcd EtcdReader, argv []string, streams genericiooptions.IOStreams, say func(*refusal)) int {
	fs := pflag.NewFlagSet("etcdctl", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	prefix := fs.Bool("prefix", false, "")
	keysOnly := fs.Bool("keys-only", false, "")
	countOnly := fs.Bool("count-only", false, "")
	valueOnly := fs.Bool("print-value-only", false, "")
	limit := fs.Int64("limit", 0, "")
	rev := fs.Int64("rev", 0, "")
	out := fs.StringP("write-out", "w", "simple", "")
	endpoints := fs.String("endpoints", "", "")
	for _, a := range argv {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "cert" || name == "key" || name == "cacert" || name == "user" || name == "password" || name == "discovery-srv") {
			say(refuse("etcd.flag", a))
			return 1
		}
	}
	if err := fs.Parse(argv); err != nil {
		fmt.Fprintf(streams.ErrOut, "Error: %v\n", err)
		return 1
	}
	if fs.Changed("endpoints") && !namesMember(etcd, *endpoints) {
		say(refuse("etcd.flag", "--endpoints="+*endpoints))
		return 1
	}
	args := fs.Args()
	if len(args) == 0 {
		say(refuse("etcd.usage"))
		return 1
	}
	if etcdWrites[args[0]] {
		say(refuse("etcd.readonly", args[0]))
		return 1
	}
	var opts []clientv3.OpOption
	if *prefix {
		opts = append(opts, clientv3.WithPrefix())
	}
	if *rev > 0 {
		opts = append(opts, clientv3.WithRev(*rev))
	}
	switch {
	case args[0] == "get" && len(args) >= 2:
		if len(args) == 3 {
			opts = append(opts, clientv3.WithRange(args[2]))
		}
		if *keysOnly {
			opts = append(opts, clientv3.WithKeysOnly())
		}
		if *countOnly {
			opts = append(opts, clientv3.WithCountOnly())
		}
		if *limit > 0 {
			opts = append(opts, clientv3.WithLimit(*limit))
		}
		resp, err := etcd.Get(ctx, args[1], opts...)
		if err != nil {
			fmt.Fprintf(streams.ErrOut, "Error: %v\n", err)
			return 1
		}
		if *out == "json" {
			return printJSON(streams.Out, resp)
		}
		for _, kv := range resp.Kvs {
			if !*valueOnly {
				fmt.Fprintln(streams.Out, string(kv.Key))
			}
			fmt.Fprintln(streams.Out, string(kv.Value))
		}
		if *countOnly {
			fmt.Fprintln(streams.Out, resp.Count)
		}
		return 0
	case args[0] == "watch" && len(args) == 2:
		for wr := range etcd.Watch(clientv3.WithRequireLeader(ctx), args[1], opts...) {
			if err := wr.Err(); err != nil {
				fmt.Fprintf(streams.ErrOut, "Error: %v\n", err)
				return 1
			}
			for _, ev := range wr.Events {
				if *out == "json" {
					printJSON(streams.Out, ev)
					continue
				}
				fmt.Fprintln(streams.Out, ev.Type)
				fmt.Fprintln(streams.Out, string(ev.Kv.Key))
				fmt.Fprintln(streams.Out, string(ev.Kv.Value))
			}
		}
		return 0
	case len(args) == 2 && args[0] == "endpoint" && args[1] == "status":
		return endpointStatus(ctx, etcd, *out, streams)
	}
	say(refuse("etcd.usage"))
	return 1
}

// namesMember says whether an --endpoints value names only the member
// this etcdctl reads, by its client address (the lesson's
// --endpoints=127.0.0.1:2379 names local mode's).
func namesMember(etcd EtcdReader, endpoints string) bool {
	hostPort := func(endpoint string) string {
		if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
			return u.Host
		}
		return endpoint
	}
	for _, e := range strings.Split(endpoints, ",") {
		if !slices.ContainsFunc(etcd.Endpoints(), func(member string) bool { return hostPort(member) == hostPort(e) }) {
			return false
		}
	}
	return endpoints != ""
}

func endpointStatus(ctx context.Context, etcd EtcdReader, format string, streams genericiooptions.IOStreams) int {
	var rows [][]string
	for _, ep := range etcd.Endpoints() {
		st, err := etcd.Status(ctx, ep)
		if err != nil {
			fmt.Fprintf(streams.ErrOut, "Failed to get the status of endpoint %s (%v)\n", ep, err)
			return 1
		}
		if format == "json" {
			printJSON(streams.Out, []any{map[string]any{"Endpoint": ep, "Status": st}})
			continue
		}
		rows = append(rows, []string{ep, fmt.Sprintf("%x", st.Header.MemberId), st.Version, humanize.Bytes(uint64(st.DbSize)), humanize.Bytes(uint64(st.DbSizeInUse)),
			fmt.Sprint(st.Leader == st.Header.MemberId), fmt.Sprint(st.IsLearner), fmt.Sprint(st.RaftTerm), fmt.Sprint(st.RaftIndex), fmt.Sprint(st.RaftAppliedIndex), strings.Join(st.Errors, ", ")})
	}
	if format == "table" {
		tw := tabwriter.NewWriter(streams.Out, 0, 4, 1, ' ', tabwriter.Debug)
		fmt.Fprintln(tw, "ENDPOINT\tID\tVERSION\tDB SIZE\tIN USE\tIS LEADER\tIS LEARNER\tRAFT TERM\tRAFT INDEX\tRAFT APPLIED INDEX\tERRORS")
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		tw.Flush()
		return 0
	}
	for _, r := range rows {
		fmt.Fprintln(streams.Out, strings.Join(r, ", "))
	}
	return 0
}

func printJSON(w io.Writer, v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(w, "Error: %v\n", err)
		return 1
	}
	fmt.Fprintln(w, string(b))
	return 0
}
