package authn

import (
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kubelab/kubelab/pipeline"
)

// Hash is the hex SHA-256 of a token: the only form in which kubelab keeps
// a token, in memory or in etcd.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Entry is who a token stands for, and until when.
type Entry struct {
	User    string    `json:"user"`
	UID     string    `json:"uid,omitempty"`
	Groups  []string  `json:"groups,omitempty"`
	Created time.Time `json:"created"`
	// Expires is when a minted token stops working. Every minted token has
	// one (EtcdTokens refuses an entry without); static tokens, which live
	// only in memory, have none.
	Expires time.Time `json:"expires,omitzero"`
	// SignIn groups the tokens of one sign-in (a browser session and the
	// kubeconfigs downloaded with it), so that signing out revokes them all.
	SignIn string `json:"signIn,omitempty"`
	// Parent is the fingerprint of the static token this one was minted
	// from (the instructor's dashboard session): once no static token has
	// it, as after a restart with a new --instructor-token, this token is
	// refused too.
	Parent string `json:"parent,omitempty"`
}

// expired reports whether the entry's token no longer works at now.
func (e Entry) expired(now time.Time) bool { return !e.Expires.IsZero() && !now.Before(e.Expires) }

// user is the entry's identity as a request's user: every holder of a
// valid token is also in system:authenticated, as in kube.
func (e Entry) user() pipeline.User {
	groups := slices.Clone(e.Groups)
	if !slices.Contains(groups, pipeline.AllAuthenticated) {
		groups = append(groups, pipeline.AllAuthenticated)
	}
	return pipeline.User{Name: e.User, UID: e.UID, Groups: groups}
}

// ErrTokenExists is returned when a token hash is already stored.
var ErrTokenExists = errors.New("a token with this hash already exists")

// TokenStore keeps minted tokens by hash.
type TokenStore interface {
	// Lookup returns the entry stored under hash; ok is false if none is.
	Lookup(ctx context.Context, hash string) (e Entry, ok bool, err error)
	// Add stores e under hash, or fails with ErrTokenExists.
	Add(ctx context.Context, hash string, e Entry) error
	// Remove deletes hash; removing a missing hash is not an error.
	Remove(ctx context.Context, hash string) error
	// SignInTokens lists the hashes of the live tokens of a sign-in.
	SignInTokens(ctx context.Context, signIn string) ([]string, error)
	// RemoveSignIn deletes every token of a sign-in and returns their hashes.
	RemoveSignIn(ctx context.Context, signIn string) ([]string, error)
	// RemoveUser deletes every token of the user that carries group, and
	// returns their hashes.
	RemoveUser(ctx context.Context, user, group string) ([]string, error)
}

// StaticTokens are the tokens given at start (admin, instructors,
// graders), kept in memory by hash only. It is safe for concurrent use.
type StaticTokens struct {
	mu sync.RWMutex
	m  map[string]Entry
	// parents are the fingerprints of the tokens in m (see Fingerprint).
	parents map[string]bool
}

// NewStaticTokens returns an empty set.
func NewStaticTokens() *StaticTokens {
	return &StaticTokens{m: map[string]Entry{}, parents: map[string]bool{}}
}

// Fingerprint names a static token in the entries of the tokens minted
// from it. It is derived from the token's hash, so a token known only by
// its hash (the admin's) has one too, and it differs from that hash, so an
// entry read from etcd does not hold the hash that static lookup uses.
func Fingerprint(hash string) string { return Hash("kubelab parent token\x00" + strings.ToLower(hash)) }

// HasParent reports whether a static token has the fingerprint fp.
func (s *StaticTokens) HasParent(fp string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.parents[fp]
}

// AddToken adds a token for u; only its hash is kept.
func (s *StaticTokens) AddToken(token string, u pipeline.User) { s.AddHash(Hash(token), u) }

// AddHash adds a token known only by its hex SHA-256, such as the admin
// token whose hash the server keeps beside its kubeconfig.
func (s *StaticTokens) AddHash(hash string, u pipeline.User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[strings.ToLower(hash)] = Entry{User: u.Name, UID: u.UID, Groups: slices.Clone(u.Groups)}
	s.parents[Fingerprint(hash)] = true
}

// Lookup finds a token by hash.
func (s *StaticTokens) Lookup(hash string) (Entry, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.m[hash]
	return e, ok
}

// Len is the number of tokens.
func (s *StaticTokens) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.m)
}

// LoadTokenFile reads a token file in kube-apiserver's --token-auth-file
// format; see ParseTokenFile.
func LoadTokenFile(path string) (*StaticTokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := ParseTokenFile(f)
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return s, nil
}

// ParseTokenFile reads kube's static token CSV: one `token,user,uid` line
// per token with an optional quoted fourth column of comma-separated
// groups, e.g. `s3cret,alice,1001,"instructors,graders"`. As in kube, a
// line with fewer than three columns is an error, an empty token is
// skipped, and a later duplicate wins.
func ParseTokenFile(r io.Reader) (*StaticTokens, error) {
	s := NewStaticTokens()
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return s, nil
		}
		if err != nil {
			return nil, err
		}
		if len(rec) < 3 {
			return nil, fmt.Errorf("line %d: want at least 3 columns (token, user name, user uid), found %d", line, len(rec))
		}
		if rec[0] == "" {
			continue
		}
		u := pipeline.User{Name: rec[1], UID: rec[2]}
		if len(rec) >= 4 && rec[3] != "" {
			u.Groups = strings.Split(rec[3], ",")
		}
		s.AddToken(rec[0], u)
	}
}
