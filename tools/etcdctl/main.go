// Command etcdctl is the upstream etcdctl, built from go.etcd.io/etcd/etcdctl/v3
// at the version pinned in tools/go.mod, so that tests read kubelab's etcd with
// the real client. tools/build.sh builds it into bin/etcdctl.
package main

import "go.etcd.io/etcd/etcdctl/v3/ctlv3"

func main() {
	ctlv3.MustStart()
}
