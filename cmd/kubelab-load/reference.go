package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
)

// referenceServer is the reference control plane of the reference's
// cluster.sh, already running, with state directory dir: the load runs
// against it as against kubelab, and its memory and CPU are those of its
// processes together (kube-apiserver, kube-controller-manager, etcd), as
// kubelab's one process holds all three.
func referenceServer(dir string) (*child, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	c := &child{kubeconfig: filepath.Join(dir, "kubeconfig"), etcdURL: "http://127.0.0.1:23790"}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		// Every process cluster.sh starts names the state directory in
		// its flags (etcd's data, kube-apiserver's certificates, the
		// controller manager's kubeconfig).
		if err == nil && bytes.Contains(cmdline, []byte(dir+"/")) && bytes.Contains(cmdline, []byte("reference/")) {
			c.pids = append(c.pids, pid)
		}
	}
	if len(c.pids) == 0 {
		return nil, errors.New("no process of the reference runs with state directory " + dir + " (cluster.sh start)")
	}
	return c, nil
}
