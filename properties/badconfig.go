package properties

import (
	"fmt"
	"slices"
	"time"

	"xceiver/model"
	"xceiver/sim"
)

// Bad configurations: a case may name one value that a datanode or a
// client must refuse at start (a bad input). Before the run's datanode
// starts, the harness starts one with that value (or, for a client
// value, makes a client with it). Property "config": the start fails
// with an error, and leaves nothing behind: the process holds what it
// held before.

// PropConfig is the property of bad configurations.
const PropConfig = "config"

// A badConfig breaks one value of a datanode's or a client's
// configuration: just past a bound where there is one.
type badConfig struct {
	name   string
	dn     func(*model.DatanodeConfig)
	client func(*model.ClientConfig)
}

var badConfigs = []badConfig{
	{name: "dn-mode", dn: func(c *model.DatanodeConfig) { c.Mode = "forked" }},
	{name: "dn-selectors-low", dn: func(c *model.DatanodeConfig) { c.Selectors = -1 }},
	{name: "dn-selectors-high", dn: func(c *model.DatanodeConfig) { c.Selectors = 257 }},
	{name: "dn-workers-low", dn: func(c *model.DatanodeConfig) { c.Workers = -1 }},
	{name: "dn-workers-high", dn: func(c *model.DatanodeConfig) { c.Workers = 1025 }},
	{name: "dn-packet-low", dn: func(c *model.DatanodeConfig) { c.PacketSize = model.BytesPerChecksum - 1 }},
	{name: "dn-packet-high", dn: func(c *model.DatanodeConfig) { c.PacketSize = model.MaxPacketData + model.BytesPerChecksum }},
	{name: "dn-packet-odd", dn: func(c *model.DatanodeConfig) { c.PacketSize = 2*model.BytesPerChecksum + 1 }},
	{name: "dn-keepalive", dn: func(c *model.DatanodeConfig) { c.Keepalive = -time.Nanosecond }},
	{name: "dn-read-timeout", dn: func(c *model.DatanodeConfig) { c.ReadTimeout = -time.Nanosecond }},
	{name: "dn-request-timeout", dn: func(c *model.DatanodeConfig) { c.RequestTimeout = -time.Nanosecond }},
	{name: "dn-send-timeout", dn: func(c *model.DatanodeConfig) { c.SendTimeout = -time.Nanosecond }},
	{name: "dn-handle-wait", dn: func(c *model.DatanodeConfig) { c.HandleWait = -time.Nanosecond }},
	{name: "dn-stall-timeout", dn: func(c *model.DatanodeConfig) { c.StallTimeout = -time.Nanosecond }},
	{name: "dn-max-conns", dn: func(c *model.DatanodeConfig) { c.MaxConns = -1 }},
	{name: "dn-max-write", dn: func(c *model.DatanodeConfig) { c.MaxWrite = -1 }},
	{name: "dn-max-buffered", dn: func(c *model.DatanodeConfig) { c.MaxBuffered = -1 }},
	{name: "dn-pool-max", dn: func(c *model.DatanodeConfig) { c.Mode, c.PoolMax, c.PoolMin = model.Reactor, 1, 0 }},
	{name: "dn-pool-min", dn: func(c *model.DatanodeConfig) { c.Mode, c.PoolMin = model.Reactor, c.PoolMax/2+1 }},
	{name: "client-network", client: func(c *model.ClientConfig) { c.Network = "udp" }},
	{name: "client-datanode", client: func(c *model.ClientConfig) { c.Datanode = "" }},
	{name: "client-cache", client: func(c *model.ClientConfig) { c.CacheCapacity = -1 }},
	{name: "client-expiry", client: func(c *model.ClientConfig) { c.CacheExpiry = -time.Nanosecond }},
	{name: "client-timeout", client: func(c *model.ClientConfig) { c.Timeout = -time.Nanosecond }},
	{name: "client-packet-low", client: func(c *model.ClientConfig) { c.PacketSize = model.BytesPerChecksum - 1 }},
	{name: "client-packet-high", client: func(c *model.ClientConfig) { c.PacketSize = model.MaxPacketData + 1 }},
}

// BadConfigs lists the names of the bad configurations a case may draw.
func BadConfigs() []string {
	var names []string
	for _, b := range badConfigs {
		names = append(names, b.name)
	}
	return names
}

func lookupBadConfig(name string) (badConfig, bool) {
	i := slices.IndexFunc(badConfigs, func(b badConfig) bool { return b.name == name })
	if i < 0 {
		return badConfig{}, false
	}
	return badConfigs[i], true
}

// drawBadConfig draws, now and then, one bad value to try at start.
func drawBadConfig(d drawer, cfg *Config) {
	if d.chance(50, "bad_config") {
		cfg.BadConfig = pick(d, "bad_config_kind", BadConfigs()...)
	}
}

// tryBadConfig starts a datanode, or makes a client, with the case's bad
// value in process p: it must be refused and leave p as it was.
func (h *harness) tryBadConfig(p model.Process, loop model.Loop) {
	b, ok := lookupBadConfig(h.cfg.BadConfig)
	if !ok {
		return
	}
	sp := p.(*sim.Process)
	before := sp.Resources()
	var err error
	what := ""
	if b.dn != nil {
		c := h.dnConfig()
		b.dn(&c)
		what = "datanode"
		var dn *model.Datanode
		if dn, err = model.StartDatanode(p, loop, c); err == nil {
			dn.Stop()
		}
	} else {
		c := h.clientConfig("bad-config")
		b.client(&c)
		what = "client"
		_, err = model.NewClient(p, loop, 1<<20, c)
	}
	if err == nil {
		h.fail(PropConfig, "a %s started with the bad configuration %s", what, b.name)
		return
	}
	if after := sp.Resources(); after != before {
		h.fail(PropConfig, "a %s refused to start with the bad configuration %s (%v) but left resources behind: %+v, before %+v",
			what, b.name, err, after, before)
	}
}

func validateBadConfig(cfg *Config) error {
	if _, ok := lookupBadConfig(cfg.BadConfig); cfg.BadConfig != "" && !ok {
		return fmt.Errorf("unknown bad configuration %q", cfg.BadConfig)
	}
	return nil
}
