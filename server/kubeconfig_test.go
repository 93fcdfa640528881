package server

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func readKubeconfig(t *testing.T, dir string) kubeconfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, kubeconfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var kc kubeconfig
	if err := yaml.UnmarshalStrict(data, &kc); err != nil {
		t.Fatalf("kubeconfig is not valid YAML of kubeconfig's shape: %v\n%s", err, data)
	}
	return kc
}

func adminToken(t *testing.T, dir string) string {
	t.Helper()
	kc := readKubeconfig(t, dir)
	if len(kc.Users) != 1 || kc.Users[0].Name != adminUser {
		t.Fatalf("users = %+v, want just %s", kc.Users, adminUser)
	}
	return kc.Users[0].User.Token
}

func TestAdminKubeconfig(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	hash, err := adminKubeconfig(dir, "http://127.0.0.1:8080", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	kc := readKubeconfig(t, dir)
	if kc.APIVersion != "v1" || kc.Kind != "Config" || kc.CurrentContext != "kubelab" ||
		len(kc.Clusters) != 1 || kc.Clusters[0].Name != "kubelab" || kc.Clusters[0].Cluster.Server != "http://127.0.0.1:8080" ||
		len(kc.Contexts) != 1 || kc.Contexts[0].Context != (kubeContext{Cluster: "kubelab", User: adminUser, Namespace: "default"}) {
		t.Fatalf("kubeconfig = %+v", kc)
	}
	token := adminToken(t, dir)
	if b, err := hex.DecodeString(token); err != nil || len(b) != 32 {
		t.Fatalf("token %q is not 32 random bytes in hex", token)
	}
	if hash != sha256.Sum256([]byte(token)) {
		t.Fatal("returned hash is not the token's")
	}
	stored, err := os.ReadFile(filepath.Join(dir, adminTokenHashFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(stored)) != hex.EncodeToString(hash[:]) {
		t.Fatalf("stored hash %q is not the token's", stored)
	}
	if strings.Contains(string(stored), token) {
		t.Fatal("the hash file holds the token itself")
	}
	for _, name := range []string{kubeconfigFile, adminTokenHashFile} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", name, fi.Mode().Perm())
		}
	}

	t.Run("restart keeps the token and follows the address", func(t *testing.T) {
		if _, err := adminKubeconfig(dir, "http://127.0.0.1:9090", nil, ""); err != nil {
			t.Fatal(err)
		}
		if got := adminToken(t, dir); got != token {
			t.Fatalf("token changed across restarts: %q, was %q", got, token)
		}
		if got := readKubeconfig(t, dir).Clusters[0].Cluster.Server; got != "http://127.0.0.1:9090" {
			t.Fatalf("server = %q, want the new address", got)
		}
	})
	t.Run("a token that does not match the hash is replaced", func(t *testing.T) {
		path := filepath.Join(dir, kubeconfigFile)
		data, _ := os.ReadFile(path)
		forged := strings.Replace(string(data), token, strings.Repeat("ab", 32), 1)
		if err := os.WriteFile(path, []byte(forged), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := adminKubeconfig(dir, "http://127.0.0.1:8080", nil, ""); err != nil {
			t.Fatal(err)
		}
		if got := adminToken(t, dir); got == token || got == strings.Repeat("ab", 32) {
			t.Fatalf("token = %q, want a fresh one", got)
		}
		token = adminToken(t, dir)
	})
	t.Run("a deleted kubeconfig gets a new token", func(t *testing.T) {
		if err := os.Remove(filepath.Join(dir, kubeconfigFile)); err != nil {
			t.Fatal(err)
		}
		if _, err := adminKubeconfig(dir, "http://127.0.0.1:8080", nil, ""); err != nil {
			t.Fatal(err)
		}
		if got := adminToken(t, dir); got == token {
			t.Fatal("token survived the deletion of its kubeconfig")
		}
	})
	t.Run("a given token is the one written, replacing a minted one", func(t *testing.T) {
		given := "a5f0c93e1b7d24e86f3a0b9c7d1e2f40"
		hash, err := adminKubeconfig(dir, "http://127.0.0.1:8080", nil, given)
		if err != nil {
			t.Fatal(err)
		}
		if got := adminToken(t, dir); got != given || hash != sha256.Sum256([]byte(given)) {
			t.Fatalf("the kubeconfig holds %q, want the given token", got)
		}
	})
	t.Run("no temp files left behind", func(t *testing.T) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.Contains(e.Name(), ".tmp") {
				t.Errorf("leftover %s", e.Name())
			}
		}
	})
}

func TestServerURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ listen, actual, want string }{
		{":8080", "[::]:8080", "http://127.0.0.1:8080"},
		{"0.0.0.0:8080", "0.0.0.0:8080", "http://127.0.0.1:8080"},
		{"[::]:8080", "[::]:8080", "http://127.0.0.1:8080"},
		{"127.0.0.1:0", "127.0.0.1:41234", "http://127.0.0.1:41234"},
		{"localhost:8080", "127.0.0.1:8080", "http://localhost:8080"},
		{"[::1]:8080", "[::1]:8080", "http://[::1]:8080"},
		{"192.168.1.5:80", "192.168.1.5:80", "http://192.168.1.5:80"},
	} {
		addr, err := net.ResolveTCPAddr("tcp", tc.actual)
		if err != nil {
			t.Fatal(err)
		}
		if got := serverURL(tc.listen, addr); got != tc.want {
			t.Errorf("serverURL(%q, %s) = %q, want %q", tc.listen, tc.actual, got, tc.want)
		}
	}
}
