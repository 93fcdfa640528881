package server

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	valid := func(mutate func(*Config)) Config {
		c := DefaultConfig()
		mutate(&c)
		return c
	}
	t.Run("OK", func(t *testing.T) {
		for name, c := range map[string]Config{
			"defaults":               DefaultConfig(),
			"class on any interface": valid(func(c *Config) { c.Listen, c.Classroom = ":8080", true }),
			"admin given to network": valid(func(c *Config) { c.Listen, c.LocalModeAdminOnNetwork = "0.0.0.0:8080", true }),
			"etcd given to network": valid(func(c *Config) {
				c.EtcdListenClient, c.LocalModeAdminOnNetwork = "0.0.0.0:2379", true
			}),
			"localhost":              valid(func(c *Config) { c.Listen = "localhost:8080" }),
			"other loopback address": valid(func(c *Config) { c.Listen = "127.0.0.2:8080" }),
			"class etcd on network":  valid(func(c *Config) { c.EtcdListenClient, c.Classroom = "0.0.0.0:2379", true }),
			"random tokens": valid(func(c *Config) {
				c.InstructorToken, c.GraderToken = "3f9c1a7be04d5e2c8a61f0b7d93e4c25", "b7e2d90c4f1a36e8d5c7a0f2b9e41d63"
			}),
			"class with a join code":  valid(func(c *Config) { c.Classroom, c.JoinCode = true, "k8s-101" }),
			"ipv6":                    valid(func(c *Config) { c.Listen = "[::1]:8080" }),
			"free port":               valid(func(c *Config) { c.Listen = "127.0.0.1:0" }),
			"no etcd client listener": valid(func(c *Config) { c.EtcdListenClient = "" }),
			"etcd client as URL":      valid(func(c *Config) { c.EtcdListenClient = "http://127.0.0.1:2379" }),
			"external etcd": valid(func(c *Config) {
				c.EtcdListenClient = ""
				c.EtcdEndpoints = []string{"10.0.0.1:2379", "http://10.0.0.2:2379"}
			}),
			"compaction off":           valid(func(c *Config) { c.CompactionInterval = 0 }),
			"debug logs":               valid(func(c *Config) { c.LogLevel = "debug" }),
			"same port, different ips": valid(func(c *Config) { c.Listen = "127.0.0.2:2379" }),
			"class hosts": valid(func(c *Config) {
				c.Classroom, c.TLSSANs = true, []string{"lab.example.org", "203.0.113.7", "2001:db8::7"}
			}),
			"behind a proxy": valid(func(c *Config) {
				c.Classroom, c.ProxyProtocolFrom = true, []string{"172.16.0.0/12", "10.0.0.5", "::/0"}
			}),
			"a year's CA":             valid(func(c *Config) { c.CAValidity = 365 * 24 * time.Hour }),
			"the class's certificate": valid(func(c *Config) { c.Classroom, c.TLSCertFile, c.TLSKeyFile = true, "tls.crt", "tls.key" }),
		} {
			t.Run(name, func(t *testing.T) {
				if err := c.Validate(); err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
			})
		}
	})
	t.Run("Err", func(t *testing.T) {
		for name, tc := range map[string]struct {
			c    Config
			want string
		}{
			"listen without port":       {valid(func(c *Config) { c.Listen = "8080" }), "--listen"},
			"listen port not a number":  {valid(func(c *Config) { c.Listen = ":http-ish" }), "--listen"},
			"listen port too big":       {valid(func(c *Config) { c.Listen = ":70000" }), "--listen"},
			"listen empty":              {valid(func(c *Config) { c.Listen = "" }), "--listen"},
			"no data dir":               {valid(func(c *Config) { c.DataDir = " " }), "--data-dir"},
			"negative compaction":       {valid(func(c *Config) { c.CompactionInterval = -time.Second }), "--compaction-interval"},
			"negative shutdown":         {valid(func(c *Config) { c.ShutdownTimeout = -time.Second }), "shutdown"},
			"bad log level":             {valid(func(c *Config) { c.LogLevel = "loud" }), "--log-level"},
			"etcd client not host:port": {valid(func(c *Config) { c.EtcdListenClient = "localhost" }), "--etcd-listen-client"},
			"etcd client tls":           {valid(func(c *Config) { c.EtcdListenClient = "https://127.0.0.1:2379" }), "--etcd-listen-client"},
			"etcd client on api port":   {valid(func(c *Config) { c.EtcdListenClient = "127.0.0.1:8080" }), "same address"},
			"embedded and external":     {valid(func(c *Config) { c.EtcdEndpoints = []string{"10.0.0.1:2379"} }), "cannot be combined"},
			"empty endpoint":            {valid(func(c *Config) { c.EtcdListenClient = ""; c.EtcdEndpoints = []string{"10.0.0.1:2379", ""} }), "--etcd-endpoints"},
			"endpoint with path":        {valid(func(c *Config) { c.EtcdListenClient = ""; c.EtcdEndpoints = []string{"http://10.0.0.1:2379/v3"} }), "--etcd-endpoints"},
			"local on every interface":  {valid(func(c *Config) { c.Listen = ":8080" }), "--local-mode-admin-on-network"},
			"local on 0.0.0.0":          {valid(func(c *Config) { c.Listen = "0.0.0.0:8080" }), "--local-mode-admin-on-network"},
			"local on ::":               {valid(func(c *Config) { c.Listen = "[::]:8080" }), "--local-mode-admin-on-network"},
			"local on a LAN address":    {valid(func(c *Config) { c.Listen = "192.168.1.20:8080" }), "--local-mode-admin-on-network"},
			"local on a host name":      {valid(func(c *Config) { c.Listen = "my-laptop.local:8080" }), "--local-mode-admin-on-network"},
			"local etcd on network":     {valid(func(c *Config) { c.EtcdListenClient = ":2379" }), "--local-mode-admin-on-network"},
			"placeholder join code":     {valid(func(c *Config) { c.Classroom, c.JoinCode = true, "change-me" }), "placeholder"},
			"example's join code":       {valid(func(c *Config) { c.Classroom, c.JoinCode = true, "replace-with-the-code-you-tell-students" }), "placeholder"},
			"placeholder token":         {valid(func(c *Config) { c.InstructorToken = "replace-with-openssl-rand-hex-16" }), "openssl rand -hex 16"},
			"short token":               {valid(func(c *Config) { c.GraderToken = "3f9c1a7be04d5e2" }), "at least 16"},
			"few characters":            {valid(func(c *Config) { c.GraderToken = "abababababababababababab" }), "different characters"},
			"repeated digits":           {valid(func(c *Config) { c.InstructorToken = "1234567890123456" }), "too easy to guess"},
			"weak admin token":          {valid(func(c *Config) { c.AdminToken = "abababababababababababab" }), "--admin-token"},
			"a proxy by name":           {valid(func(c *Config) { c.ProxyProtocolFrom = []string{"proxy"} }), "--proxy-protocol-from"},
			"ten years' CA":             {valid(func(c *Config) { c.CAValidity = 3650 * 24 * time.Hour }), "--ca-validity"},
			"an hour's CA":              {valid(func(c *Config) { c.CAValidity = time.Hour }), "--ca-validity"},
			"a wildcard host":           {valid(func(c *Config) { c.TLSSANs = []string{"*.example.org"} }), "--tls-san"},
			"a host with a port":        {valid(func(c *Config) { c.TLSSANs = []string{"lab.example.org:6443"} }), "--tls-san"},
			"a certificate with no key": {valid(func(c *Config) { c.Classroom, c.TLSCertFile = true, "tls.crt" }), "go together"},
			"a certificate, local mode": {valid(func(c *Config) { c.TLSCertFile, c.TLSKeyFile = "tls.crt", "tls.key" }), "classroom mode"},
			"a certificate and hosts": {valid(func(c *Config) {
				c.Classroom, c.TLSCertFile, c.TLSKeyFile, c.TLSSANs = true, "tls.crt", "tls.key", []string{"lab.example.org"}
			}), "--tls-san"},
			"admin token is the grader's": {valid(func(c *Config) {
				c.GraderToken, c.AdminToken = "b7e2d90c4f1a36e8d5c7a0f2b9e41d63", "b7e2d90c4f1a36e8d5c7a0f2b9e41d63"
			}), "--admin-token must differ"},
		} {
			t.Run(name, func(t *testing.T) {
				err := tc.c.Validate()
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Validate() = %v, want an error mentioning %q", err, tc.want)
				}
			})
		}
	})
}

// TestOpensslTokensPass: whatever `openssl rand -hex 16` prints, which the
// error messages recommend, passes the token rules.
func TestOpensslTokensPass(t *testing.T) {
	t.Parallel()
	for range 10000 {
		b := make([]byte, 16)
		rand.Read(b)
		if err := checkToken("--grader-token", hex.EncodeToString(b)); err != nil {
			t.Fatalf("%x: %v", b, err)
		}
	}
}
