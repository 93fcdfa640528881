package server

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

const (
	kubeconfigFile     = "kubeconfig"
	adminTokenHashFile = "admin-token.sha256"
	adminUser          = "kubelab-admin"
	clusterName        = "kubelab"
)

// kubeconfig is the subset of client-go's clientcmd v1 Config that the admin
// kubeconfig needs; the field names are kubeconfig's own.
type kubeconfig struct {
	APIVersion     string         `json:"apiVersion"`
	Kind           string         `json:"kind"`
	Clusters       []namedCluster `json:"clusters"`
	Users          []namedUser    `json:"users"`
	Contexts       []namedContext `json:"contexts"`
	CurrentContext string         `json:"current-context"`
}

type namedCluster struct {
	Name    string  `json:"name"`
	Cluster cluster `json:"cluster"`
}

type cluster struct {
	Server                   string `json:"server"`
	CertificateAuthorityData []byte `json:"certificate-authority-data,omitempty"`
}

type namedUser struct {
	Name string   `json:"name"`
	User authInfo `json:"user"`
}

type authInfo struct {
	Token string `json:"token,omitempty"`
}

type namedContext struct {
	Name    string      `json:"name"`
	Context kubeContext `json:"context"`
}

type kubeContext struct {
	Cluster   string `json:"cluster"`
	User      string `json:"user"`
	Namespace string `json:"namespace,omitempty"`
}

// adminKubeconfig writes <dataDir>/kubeconfig for serverURL and returns the
// SHA-256 of the admin token in it. The token survives restarts: it is reused
// when the existing kubeconfig's token still matches the stored hash, and
// minted afresh otherwise. Only the hash is kept apart from the kubeconfig, so
// that deleting the kubeconfig revokes the token it held.
//
// A given token (--admin-token) is written instead, and nothing minted:
// replicas given the same one write the same kubeconfig.
//
// In classroom mode serverURL is the HTTPS port and caPEM its CA: kubectl
// sends the token only over TLS, and anonymous requests are no longer
// cluster-admin there.
func adminKubeconfig(dataDir, serverURL string, caPEM []byte, given string) (tokenHash [sha256.Size]byte, err error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return tokenHash, err
	}
	path := filepath.Join(dataDir, kubeconfigFile)
	hashPath := filepath.Join(dataDir, adminTokenHashFile)

	token := given
	if token == "" {
		if token, err = existingAdminToken(path, hashPath); err != nil {
			return tokenHash, err
		}
	}
	if token == "" {
		if token, err = newToken(); err != nil {
			return tokenHash, err
		}
	}
	tokenHash = sha256.Sum256([]byte(token))
	if err := writeFileAtomic(hashPath, []byte(hex.EncodeToString(tokenHash[:])+"\n")); err != nil {
		return tokenHash, err
	}
	kc := kubeconfig{
		APIVersion:     "v1",
		Kind:           "Config",
		Clusters:       []namedCluster{{Name: clusterName, Cluster: cluster{Server: serverURL, CertificateAuthorityData: caPEM}}},
		Users:          []namedUser{{Name: adminUser, User: authInfo{Token: token}}},
		Contexts:       []namedContext{{Name: clusterName, Context: kubeContext{Cluster: clusterName, User: adminUser, Namespace: "default"}}},
		CurrentContext: clusterName,
	}
	data, err := yaml.Marshal(kc)
	if err != nil {
		return tokenHash, err
	}
	return tokenHash, writeFileAtomic(path, data)
}

// existingAdminToken returns the admin token of the kubeconfig at path if its
// hash matches the one stored at hashPath, and "" if there is none to reuse.
func existingAdminToken(path, hashPath string) (string, error) {
	stored, err := os.ReadFile(hashPath)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	want, err := hex.DecodeString(strings.TrimSpace(string(stored)))
	if err != nil || len(want) != sha256.Size {
		return "", nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(data, &kc); err != nil {
		return "", nil
	}
	for _, u := range kc.Users {
		if u.Name != adminUser || u.User.Token == "" {
			continue
		}
		got := sha256.Sum256([]byte(u.User.Token))
		if subtle.ConstantTimeCompare(got[:], want) == 1 {
			return u.User.Token, nil
		}
	}
	return "", nil
}

func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// writeFileAtomic replaces path with data, mode 0600, so that a crash never
// leaves a half-written kubeconfig behind.
func writeFileAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// connectableHost turns a listen host into one a client can dial: a
// wildcard or empty host means "every interface", so loopback works.
func connectableHost(host string) string {
	switch host {
	case "", "0.0.0.0", "::":
		return "127.0.0.1"
	}
	return host
}

// serverURL is the URL clients use to reach a server listening on listen,
// whose listener actually got addr (which resolves a port of 0).
func serverURL(listen string, addr net.Addr) string {
	host, _, _ := net.SplitHostPort(listen)
	_, port, _ := net.SplitHostPort(addr.String())
	return "http://" + net.JoinHostPort(connectableHost(host), port)
}
