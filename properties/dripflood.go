package properties

import (
	"slices"
	"time"

	"xceiver/model"
)

// drawDripFlood makes the drip peers of a tenth of the runs that have
// them a flood (a flood's run costs several others': check's speed), up to past the datanode's capacity (every run's with
// drip peers if force lists drip:flood), drawn last of all so that the
// draws before it stay as they were. A dripper's request stays partial
// until RequestTimeout (a second at least in check), and a datanode that
// counts a connection idle only while nothing has arrived on it would
// let a flood of them hold its cap that long, each time they return.
// Flooding drippers drip reads only (hostileMessage): a write's packet
// dripped is an op under way, not a request that never came.
func drawDripFlood(d drawer, cfg *Config, force []string) {
	forced := slices.Contains(force, HostileDrip+":flood")
	for i, p := range cfg.Hostile {
		if p.Kind != HostileDrip {
			continue
		}
		// (Not beside an idle flood: the two together, up to two and a
		// half times the capacity, outrun the listen backlog while the
		// drippers are too young to tell: dripFloodApart.)
		if (forced || d.chance(10, "hostile_drip_flood")) && !idleFlood(cfg) {
			capacity := hostileCapacity(cfg)
			cfg.Hostile[i].Count = d.n(capacity/2, capacity+capacity/4, "hostile_drip_flood_count")
			// (Coming back slower, as an idle flood does.)
			cfg.Hostile[i].Gap = d.dur(200*time.Millisecond, time.Second, "hostile_drip_flood_gap")
			// A new connection may wait in the listen backlog until the
			// drippers ahead of it have each been partial for
			// model.TCPPartialGrace: its client gives it that long.
			cfg.Timeout = max(cfg.Timeout, time.Second)
		}
		return
	}
}

// dripFloodApart is how far apart a drip flood's n peers arrive: over four
// of model.TCPPartialGrace at least. Until a dripper's request has been
// partial that long the datanode cannot tell it from an honest client's
// request on its way, so it takes in at most its cap's room per grace,
// and its listen backlog (128) holds the rest; a flood arriving faster
// overflows the backlog, and a client's SYN dropped then is sent again
// only after TCP's initial RTO of 1 s, past the availability bound: a SYN
// flood, which no datanode that gives honest requests that grace can
// prevent. (Over two graces, 1 of 2,000 forced runs still overflowed: a
// threaded datanode's cap of 192 took 561 drippers.)
func dripFloodApart(n int) time.Duration {
	return max(floodApart, 4*model.TCPPartialGrace/time.Duration(n))
}

// idleFlood reports whether the case has a flood of idle peers.
func idleFlood(cfg *Config) bool {
	return slices.ContainsFunc(cfg.Hostile, func(p HostilePeer) bool { return p.Kind == HostileIdle && p.flood() })
}
