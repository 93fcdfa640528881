package storage

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// continueToken is kube-apiserver's continue token: base64 of
// {"v":"meta.k8s.io/v1","rv":<list revision>,"start":<key after the prefix>}.
// Keeping its format means tokens look the same to students as a real cluster's.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

const continueTokenVersion = "meta.k8s.io/v1"

// EncodeContinue makes the token for a list that read revision rv and should
// resume at key nextKey, which lies under listPrefix.
func EncodeContinue(nextKey, listPrefix string, rv int64) (string, error) {
	start := strings.TrimPrefix(nextKey, listPrefix)
	data, err := json.Marshal(continueToken{APIVersion: continueTokenVersion, ResourceVersion: rv, StartKey: start})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(data), nil
}

// DecodeContinue returns the key to resume from and the revision to read at
// (-1: the latest).
// A token that could walk outside listPrefix is refused.
func DecodeContinue(token, listPrefix string) (fromKey string, rv int64, err error) {
	invalid := func(why string) (string, int64, error) {
		return "", 0, &Error{Code: CodeInvalidRequest, Message: "continue key is not valid: " + why}
	}
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	}
	var c continueToken
	if err := json.Unmarshal(data, &c); err != nil {
		return invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	}
	if c.APIVersion != continueTokenVersion {
		return invalid(fmt.Sprintf("server does not recognize this encoded version %q", c.APIVersion))
	}
	// rv -1 is the token an expired continue offers: carry on at the latest revision.
	if c.ResourceVersion == 0 || c.ResourceVersion < -1 {
		return invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	}
	if c.StartKey == "" {
		return invalid("encoded start key is empty")
	}
	// A start key that path.Clean would change could range over keys above
	// the list's prefix; refuse it rather than serve another namespace.
	key := "/" + strings.TrimPrefix(c.StartKey, "/")
	if path.Clean(key) != key {
		return invalid("path traversal attempt detected")
	}
	return listPrefix + key[1:], c.ResourceVersion, nil
}
