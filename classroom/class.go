package classroom

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubelab/kubelab/pipeline"
)

// StudentPrefix is where students live in etcd, one key per student,
// outside the /registry tree the Kubernetes API serves.
const StudentPrefix = "/kubelab/classroom/students/"

// Student is one signed-in student.
type Student struct {
	// Name is both the student's user name and their namespace.
	Name string `json:"name"`
	// DisplayName is what the student typed, shown escaped.
	DisplayName string    `json:"displayName"`
	Joined      time.Time `json:"joined"`
	// Class is the class the student joined, if it has a name.
	Class string `json:"class,omitempty"`
	// From is the client address the student signed in from (an IPv6
	// one as its /64), kept to count the sign-ins of each address; no
	// page shows it.
	From string `json:"from,omitempty"`
}

// User is the identity a student's tokens authenticate as.
func (s Student) User() pipeline.User {
	groups := []string{StudentGroup, pipeline.AllAuthenticated}
	if s.Class != "" {
		groups = append(groups, ClassGroupPrefix+s.Class)
	}
	return pipeline.User{Name: s.Name, Groups: groups}
}

// Minter mints bearer tokens for a user; pipeline/authn's Authenticator is one.
type Minter interface {
	Mint(ctx context.Context, u pipeline.User) (string, error)
}

// Config is what a Class needs.
type Config struct {
	Client *clientv3.Client
	// JoinCode, if set, must be given to join.
	JoinCode string
	// ClassName, if set, names the class students join.
	ClassName string
	Tokens    Minter
	// Provision gives a new student their world: namespace, RoleBinding,
	// the lesson's demo pods. It must be safe to call again for the same
	// student (after a failure part-way). It returns ErrNameTaken, wrapped,
	// when the name already belongs to someone else (a namespace or an RBAC
	// subject kubelab did not make for this student): Join then tries the
	// next name.
	Provision func(ctx context.Context, s Student) error
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// MaxStudents, if not 0, is how many students may join: each gets a
	// namespace and a quota, so a shared join code must not give a
	// stranger, or a student's throwaway accounts, without end.
	MaxStudents int
	// MaxJoinsPerAddress, if not 0, is how many students may join from
	// one client address: a student's throwaway accounts, each with
	// requests in flight of its own, filled the class's write slots.
	MaxJoinsPerAddress int
}

// Class is the set of students, kept in etcd so that every replica
// sharing it knows every student.
type Class struct{ cfg Config }

// New returns the class kept through cfg.Client.
func New(cfg Config) *Class {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Class{cfg: cfg}
}

// Errors Join returns for what the student got wrong.
var (
	ErrWrongJoinCode = errors.New("that join code is not this class's: ask your instructor for it")
	ErrClassFull     = errors.New("every name close to that display name is taken: choose another")
	// ErrNameTaken is what Provision returns for a name that is someone
	// else's outside the class (an existing namespace, a user RBAC names).
	ErrNameTaken = errors.New("the name belongs to someone else")
	// ErrNoSeatLeft is returned, wrapped with the class's size, when
	// MaxStudents have joined.
	ErrNoSeatLeft = errors.New("the class is full: ask your instructor")
	// ErrAddressFull is returned, wrapped with the count, when
	// MaxJoinsPerAddress students have joined from the address.
	ErrAddressFull = errors.New("enough students have joined from this device's network address: sign in again with the account you made, or ask your instructor")
)

// Join signs a student in: it checks the join code and display name,
// reserves a unique name, provisions the student's namespace, and mints
// the token their browser session carries. from is the client's address
// (the same string for every sign-in from one device or network), or ""
// where there is none to count.
func (c *Class) Join(ctx context.Context, displayName, joinCode, from string) (Student, string, error) {
	if c.cfg.JoinCode != "" && !sameJoinCode(joinCode, c.cfg.JoinCode) {
		return Student{}, "", ErrWrongJoinCode
	}
	display, err := CleanDisplayName(displayName)
	if err != nil {
		return Student{}, "", err
	}
	s, err := c.claim(ctx, display, from)
	if err != nil {
		return Student{}, "", err
	}
	token, err := c.cfg.Tokens.Mint(ctx, s.User())
	if err != nil {
		return Student{}, "", err
	}
	return s, token, nil
}

// sameJoinCode compares SHA-256 digests rather than the codes themselves:
// subtle.ConstantTimeCompare returns at once when the lengths differ, so
// comparing the raw codes would let a timing attacker learn the code's
// length; digests always have the same length.
func sameJoinCode(given, want string) bool {
	g, w := sha256.Sum256([]byte(strings.TrimSpace(given))), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// claim gives display the first candidate name that is free in the class
// and provisioned for this student: a name whose provisioning finds it is
// someone else's (ErrNameTaken) is given back and the next one tried.
func (c *Class) claim(ctx context.Context, display, from string) (Student, error) {
	for _, name := range candidates(display) {
		s, ok, err := c.reserve(ctx, name, display, from)
		if err != nil {
			return Student{}, err
		}
		if !ok {
			continue
		}
		err = c.cfg.Provision(ctx, s)
		if err == nil {
			return s, nil
		}
		// Give the name back, so a retry is not "alice-2", and so that a
		// name that is someone else's is not held by no one.
		_, _ = c.cfg.Client.Delete(context.WithoutCancel(ctx), StudentPrefix+s.Name)
		if !errors.Is(err, ErrNameTaken) {
			return Student{}, fmt.Errorf("preparing the namespace of %s: %w", s.Name, err)
		}
	}
	return Student{}, ErrClassFull
}

// reserve claims name for display with a create-only transaction, so two
// students (on two replicas) never share one; ok is false if it is taken.
// With MaxStudents or MaxJoinsPerAddress, the same transaction holds a
// seat: it is refused if the class changed since it was counted, and then
// counted again, so that sign-ins at once on any replica never pass a cap.
func (c *Class) reserve(ctx context.Context, name, display, from string) (s Student, ok bool, err error) {
	s = Student{Name: name, DisplayName: display, Joined: c.cfg.Now().UTC().Truncate(time.Second), Class: c.cfg.ClassName, From: from}
	data, err := json.Marshal(s)
	if err != nil {
		return Student{}, false, err
	}
	key := StudentPrefix + name
	for {
		conds := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)}
		if c.capped(from) {
			rev, err := c.checkSeats(ctx, from)
			if err != nil {
				return Student{}, false, err
			}
			// No student joined since the count (a name given back
			// leaves the count high, which errs on the safe side).
			conds = append(conds, clientv3.Compare(clientv3.ModRevision(StudentPrefix).WithPrefix(), "<", rev+1))
		}
		resp, err := c.cfg.Client.Txn(ctx).
			If(conds...).
			Then(clientv3.OpPut(key, string(data))).
			Else(clientv3.OpGet(key, clientv3.WithCountOnly())).
			Commit()
		if err != nil {
			return Student{}, false, fmt.Errorf("storing the student: %w", err)
		}
		if resp.Succeeded {
			return s, true, nil
		}
		if resp.Responses[0].GetResponseRange().Count > 0 {
			return Student{}, false, nil // the name is someone else's
		}
		// Another student joined meanwhile: count again.
	}
}

// capped says whether a join from the address counts seats.
func (c *Class) capped(from string) bool {
	return c.cfg.MaxStudents > 0 || (c.cfg.MaxJoinsPerAddress > 0 && from != "")
}

// checkSeats counts the class, and the students who joined from the
// address, against the caps; it returns the revision it counted at.
func (c *Class) checkSeats(ctx context.Context, from string) (int64, error) {
	perAddress := c.cfg.MaxJoinsPerAddress > 0 && from != ""
	opts := []clientv3.OpOption{clientv3.WithPrefix()}
	if !perAddress {
		opts = append(opts, clientv3.WithCountOnly())
	}
	seats, err := c.cfg.Client.Get(ctx, StudentPrefix, opts...)
	if err != nil {
		return 0, fmt.Errorf("counting the class: %w", err)
	}
	if c.cfg.MaxStudents > 0 && seats.Count >= int64(c.cfg.MaxStudents) {
		return 0, fmt.Errorf("%w (%d students have joined)", ErrNoSeatLeft, seats.Count)
	}
	if perAddress {
		same := 0
		for _, kv := range seats.Kvs {
			var other Student
			if err := json.Unmarshal(kv.Value, &other); err != nil {
				return 0, fmt.Errorf("student %s is corrupt in etcd: %w", kv.Key, err)
			}
			if other.From == from {
				same++
			}
		}
		if same >= c.cfg.MaxJoinsPerAddress {
			return 0, fmt.Errorf("%w (%d students have joined from %s)", ErrAddressFull, same, from)
		}
	}
	return seats.Header.Revision, nil
}

// Get returns the student called name.
func (c *Class) Get(ctx context.Context, name string) (Student, bool, error) {
	resp, err := c.cfg.Client.Get(ctx, StudentPrefix+name)
	if err != nil || len(resp.Kvs) == 0 {
		return Student{}, false, err
	}
	var s Student
	if err := json.Unmarshal(resp.Kvs[0].Value, &s); err != nil {
		return Student{}, false, fmt.Errorf("student %s is corrupt in etcd: %w", name, err)
	}
	return s, true, nil
}

// Students lists the class by name.
func (c *Class) Students(ctx context.Context) ([]Student, error) {
	resp, err := c.cfg.Client.Get(ctx, StudentPrefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := make([]Student, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var s Student
		if err := json.Unmarshal(kv.Value, &s); err != nil {
			return nil, fmt.Errorf("student %s is corrupt in etcd: %w", kv.Key, err)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DisplayNames are the names the students typed, by user name: what an
// instructor or grader reads beside the user name, since a name in Thai
// script becomes "student" as a user name. The student record is the one
// place a display name is kept; it is written once, at sign-in, and no
// endpoint changes it.
func (c *Class) DisplayNames(ctx context.Context) (map[string]string, error) {
	list, err := c.Students(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(list))
	for _, s := range list {
		out[s.Name] = s.DisplayName
	}
	return out, nil
}

// Remove takes name out of the class, and its seat back: the record is
// what checkSeats counts, for the class and for the address it joined
// from. also are deleted in the same transaction (what else the student
// left in etcd), so that no one is ever shown half removed. It reports
// false if name was not in the class.
func (c *Class) Remove(ctx context.Context, name string, also ...clientv3.Op) (bool, error) {
	key := StudentPrefix + name
	resp, err := c.cfg.Client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), ">", 0)).
		Then(append([]clientv3.Op{clientv3.OpDelete(key)}, also...)...).
		Commit()
	if err != nil {
		return false, fmt.Errorf("removing the student: %w", err)
	}
	return resp.Succeeded, nil
}
