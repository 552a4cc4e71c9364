package model

import (
	"strings"
	"testing"
	"time"
)

// Each bound of a datanode's configuration: the value on the bound is
// accepted, the one past it refused with an error naming the field; zero
// means the default.
func TestDatanodeConfigBounds(t *testing.T) {
	cases := []struct {
		name  string
		set   func(*DatanodeConfig)
		error string // "" when accepted
	}{
		{"selectors 1", func(c *DatanodeConfig) { c.Selectors = 1 }, ""},
		{"selectors 256", func(c *DatanodeConfig) { c.Selectors = 256 }, ""},
		{"selectors 257", func(c *DatanodeConfig) { c.Selectors = 257 }, "selectors 257"},
		{"selectors -1", func(c *DatanodeConfig) { c.Selectors = -1 }, "selectors -1"},
		{"workers 1", func(c *DatanodeConfig) { c.Workers = 1 }, ""},
		{"workers 1024", func(c *DatanodeConfig) { c.Workers = 1024 }, ""},
		{"workers 1025", func(c *DatanodeConfig) { c.Workers = 1025 }, "workers 1025"},
		{"workers -1", func(c *DatanodeConfig) { c.Workers = -1 }, "workers -1"},
		{"packet one chunk", func(c *DatanodeConfig) { c.PacketSize = BytesPerChecksum }, ""},
		{"packet max", func(c *DatanodeConfig) { c.PacketSize = MaxPacketData }, ""},
		{"packet past max", func(c *DatanodeConfig) { c.PacketSize = MaxPacketData + BytesPerChecksum }, "packet size"},
		{"packet below a chunk", func(c *DatanodeConfig) { c.PacketSize = BytesPerChecksum - 1 }, "packet size"},
		{"packet not whole chunks", func(c *DatanodeConfig) { c.PacketSize = 3 * BytesPerChecksum / 2 }, "packet size"},
		{"keep-alive negative", func(c *DatanodeConfig) { c.Keepalive = -time.Nanosecond }, "keep-alive"},
		{"read timeout negative", func(c *DatanodeConfig) { c.ReadTimeout = -time.Nanosecond }, "read timeout"},
		// One message covers the four timeouts: it must put each value
		// beside its own name.
		{"request timeout negative", func(c *DatanodeConfig) { c.RequestTimeout = -time.Nanosecond }, "request -1ns"},
		{"send timeout negative", func(c *DatanodeConfig) { c.SendTimeout = -time.Nanosecond }, "send -1ns"},
		{"handle wait negative", func(c *DatanodeConfig) { c.HandleWait = -time.Nanosecond }, "handle wait -1ns"},
		{"stall timeout negative", func(c *DatanodeConfig) { c.StallTimeout = -time.Nanosecond }, "stall -1ns"},
		{"mode", func(c *DatanodeConfig) { c.Mode = "forked" }, "server mode"},
		{"threaded", func(c *DatanodeConfig) { c.Mode = Threaded }, ""},
	}
	for _, tc := range cases {
		var c DatanodeConfig
		tc.set(&c)
		err := c.fill()
		switch {
		case tc.error == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.error != "" && (err == nil || !strings.Contains(err.Error(), tc.error)):
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.error)
		}
	}
	var c DatanodeConfig
	if err := c.fill(); err != nil {
		t.Fatal(err)
	}
	d := DefaultDatanodeConfig()
	d.TokenKey = DefaultTokenKey
	if c.Mode != d.Mode || c.Selectors != d.Selectors || c.Workers != d.Workers || c.PoolMax != d.PoolMax ||
		c.PoolIdle != d.PoolIdle || c.Keepalive != d.Keepalive || c.ReadTimeout != d.ReadTimeout ||
		c.PacketSize != d.PacketSize || c.Dir != d.Dir || c.MaxWrite != d.MaxWrite || string(c.TokenKey) != string(d.TokenKey) {
		t.Errorf("zero config filled as %+v, want the defaults %+v", c, d)
	}
}

// The defaults are HDFS's: dfs.datanode.socket.reuse.keepalive (4000 ms),
// dfs.client.socket-timeout (60000 ms), dfs.client-write-packet-size
// (65536).
func TestDatanodeConfigDefaultsAreHDFSs(t *testing.T) {
	d := DefaultDatanodeConfig()
	if d.Keepalive != 4*time.Second || d.ReadTimeout != 60*time.Second || d.PacketSize != 64<<10 {
		t.Errorf("keep-alive %v, read timeout %v, packet size %d; want 4s, 1m0s, 65536", d.Keepalive, d.ReadTimeout, d.PacketSize)
	}
}

// A read run's configuration: --keepalive 0 is the datanode's default
// (only a negative one is refused), and a read size outside the block is
// refused naming both figures, each as itself.
func TestReadScenarioValidate(t *testing.T) {
	s := DefaultReadScenario()
	s.Server.Keepalive = 0
	if err := s.Validate(); err != nil {
		t.Errorf("--keepalive 0: %v", err)
	}
	s.Server.Keepalive = -time.Nanosecond
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "--keepalive") {
		t.Errorf("--keepalive -1ns: %v, want it refused", err)
	}
	for _, tc := range []struct {
		read, block int
		want        string
	}{
		{2000, 1000, "--read-size 2000 outside [1, block size 1000]"},
		{0, 1000, "--read-size 0 outside [1, block size 1000]"},
	} {
		s := DefaultReadScenario()
		s.ReadSize, s.BlockSize = tc.read, tc.block
		if err := s.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("read size %d, block size %d: %v, want %q", tc.read, tc.block, err, tc.want)
		}
	}
}
