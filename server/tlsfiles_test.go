package server_test

import (
	"context"
	"crypto/tls"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelab/kubelab/internal/certtest"
	"github.com/kubelab/kubelab/server"
	"github.com/kubelab/kubelab/server/pki"
)

// TestTransportTheInstructorsCertificate: with --tls-cert-file, the class
// is served with the instructor's certificate, a student's downloaded
// kubeconfig trusts its issuer and works, and kubelab keeps no CA key in
// etcd for anyone to take.
func TestTransportTheInstructorsCertificate(t *testing.T) {
	t.Parallel()
	certFile, keyFile, issuer := certtest.Files(t, time.Now().AddDate(0, 3, 0), true, "localhost", "127.0.0.1")
	lab := classroomLab(t, func(c *server.Config) { c.TLSCertFile, c.TLSKeyFile = certFile, keyFile })

	s := join(t, lab, "Pia")
	if _, err := s.clientset(t).CoreV1().Pods(s.name).List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatalf("the student's kubeconfig against the instructor's certificate: %v", err)
	}
	kc, err := os.ReadFile(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kc), "certificate-authority-data") {
		t.Fatal("the kubeconfig trusts no certificate")
	}

	conn, err := tls.Dial("tcp", strings.TrimPrefix(lab.SecureURL(), "https://"), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	served := conn.ConnectionState().PeerCertificates
	conn.Close()
	if len(served) == 0 || served[0].Issuer.CommonName != issuer.Subject.CommonName {
		t.Fatalf("HTTPS serves a certificate issued by %q, want the instructor's %q", served[0].Issuer.CommonName, issuer.Subject.CommonName)
	}
	resp, err := lab.EtcdClient().Get(context.Background(), pki.CAKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Fatal("kubelab made a CA of its own and keeps its key in etcd")
	}
}
