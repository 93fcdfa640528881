package server

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	valid := func(mutate func(*Config)) Config {
		c := DefaultConfig()
		mutate(&c)
		return c
	}
	t.Run("OK", func(t *testing.T) {
		for name, c := range map[string]Config{
			"defaults":                DefaultConfig(),
			"any interface":           valid(func(c *Config) { c.Listen = "0.0.0.0:8080" }),
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
