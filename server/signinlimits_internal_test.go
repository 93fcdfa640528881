package server

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"
)

// TestClientAddrKeysIPv6ByItsSlash64: one host is routinely given a whole
// IPv6 /64, so every address in it shares one sign-in allowance; an IPv4
// address (or one mapped into IPv6) is its own.
func TestClientAddrKeysIPv6ByItsSlash64(t *testing.T) {
	t.Parallel()
	addr := func(remote string) string {
		r := httptest.NewRequest("POST", "/signin", nil)
		r.RemoteAddr = remote
		return clientAddr(r)
	}
	for remote, want := range map[string]string{
		"192.0.2.7:5000":                    "192.0.2.7",
		"[::ffff:192.0.2.7]:5000":           "192.0.2.7",
		"[2001:db8:1:2::1]:5000":            "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff:ffff:ffff:9]:1": "2001:db8:1:2::/64",
		"[fe80::1%eth0]:1":                  "fe80::/64",
		"[2001:db8:1:3::1]:5000":            "2001:db8:1:3::/64",
	} {
		if got := addr(remote); got != want {
			t.Errorf("clientAddr(%s) = %q, want %q", remote, got, want)
		}
	}
	// An attacker who moves through their /64 is still one client.
	l := newSigninLimits()
	refused := false
	for i := range signinBurst + 1 {
		if !l.allow(addr(fmt.Sprintf("[2001:db8:1:2::%x]:5000", i+1))) {
			refused = true
		}
	}
	if !refused {
		t.Fatalf("%d sign-ins from one /64 were all allowed (burst %d)", signinBurst+1, signinBurst)
	}
	if !l.allow(addr("[2001:db8:1:3::1]:5000")) {
		t.Fatal("the next /64 was refused")
	}
}

// TestSigninLimitsAreNeverWipedWhole: a flood of new addresses does not
// give the address that guessed its allowance away a fresh one. The flood
// shares one limiter while no remembered limiter can be forgotten; once
// limiters have refilled, they are forgotten one by one for new addresses.
func TestSigninLimitsAreNeverWipedWhole(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	l := newSigninLimits()
	l.now = func() time.Time { return now }
	const attacker = "198.51.100.1"
	for range signinBurst {
		l.allow(attacker)
	}
	if l.allow(attacker) {
		t.Fatal("the attacker's allowance did not run out")
	}
	allowed := 0
	for i := range maxLimiters + 2*signinBurst {
		if l.allow(fmt.Sprintf("flood-%d", i)) {
			allowed++
		}
	}
	if l.allow(attacker) {
		t.Fatal("a flood of new addresses reset the attacker's allowance")
	}
	if want := maxLimiters - 1 + signinBurst; allowed != want {
		t.Fatalf("the flood was allowed %d sign-ins, want %d (one per remembered address, then one shared burst)", allowed, want)
	}
	if len(l.m) > maxLimiters || l.lru.Len() != len(l.m) {
		t.Fatalf("%d limiters remembered (list %d), at most %d", len(l.m), l.lru.Len(), maxLimiters)
	}
	// Two seconds on, the flood's limiters (one sign-in each) are full
	// again and can be forgotten; the attacker's (two tokens) cannot.
	now = now.Add(2 * time.Second)
	for i := range 100 {
		if !l.allow(fmt.Sprintf("later-%d", i)) {
			t.Fatalf("new address %d refused once old limiters had refilled", i)
		}
	}
	if _, ok := l.m[attacker]; !ok || len(l.m) > maxLimiters {
		t.Fatalf("attacker remembered: %v; %d limiters", ok, len(l.m))
	}
}
