package sim

import "time"

// Packetdrill-style scripts: socket calls at given times on a loopback
// connection, and every segment the exchange puts on the wire after the
// handshake (or the warm-up), each with the window in which it must
// appear, from the script's start. sim's tests run them in the simulator;
// real's run them on real loopback, capturing lo when permitted.

type ScriptStep struct {
	At  time.Duration
	Who string // "client" or "server"
	Op  string // write, more (MSG_MORE), cork, uncork, nodelay, shutdown
	N   int
}

type ScriptSeg struct {
	From   string
	Len    int
	Flags  string        // as in traces: S F R P, then . for ACK
	Lo, Hi time.Duration // window for the segment's time, from the script's start
}

type Script struct {
	Name string
	Warm bool // start from a reused connection: 10 bytes each way, then 100 ms idle (the server in pingpong)
	// NotReal, if set, says why real loopback differs (a rule the
	// simulator lacks); the real run skips the script with it.
	NotReal string
	Steps   []ScriptStep
	Segs    []ScriptSeg
}

func Scripts() []Script {
	return []Script{
		{
			// packetdrill sendmsg_msg_more.pkt: a MSG_MORE tail with
			// nothing in flight leaves when the probe timer fires.
			Name:  "sendmsg_msg_more",
			Steps: []ScriptStep{{0, "client", "more", 40}},
			Segs: []ScriptSeg{
				{"client", 40, "P.", 200 * time.Millisecond, 204 * time.Millisecond},
				{"server", 0, ".", 200 * time.Millisecond, 204 * time.Millisecond}, // quick ACK: first data
			},
		},
		{
			// packetdrill tcp_basic_server.pkt-like: data then FIN, both
			// unacknowledged by a server in pingpong. With two segments
			// in flight the tail loss probe (2·srtt + 2 ms, in jiffies)
			// sends the FIN again 4–8 ms later; the server ACKs the
			// duplicate at once, which also cancels its delayed ACK.
			Name: "fin_after_data",
			Warm: true,
			Steps: []ScriptStep{
				{0, "client", "write", 10},
				{10 * time.Millisecond, "client", "shutdown", 0},
			},
			Segs: []ScriptSeg{
				{"client", 10, "P.", 0, 0},
				{"client", 0, "F.", 10 * time.Millisecond, 10 * time.Millisecond},
				{"client", 0, "F.", 14 * time.Millisecond, 18 * time.Millisecond},
				{"server", 0, ".", 14 * time.Millisecond, 18 * time.Millisecond},
			},
		},
		{
			// The same FIN 36 ms after the data: the data's delayed-ACK
			// timer is about to expire (within ato/4), so the FIN is
			// ACKed at once (tcp_send_delayed_ack) and nothing is left
			// in flight for a probe.
			Name: "fin_meets_delack",
			Warm: true,
			Steps: []ScriptStep{
				{0, "client", "write", 10},
				{36 * time.Millisecond, "client", "shutdown", 0},
			},
			Segs: []ScriptSeg{
				{"client", 10, "P.", 0, 0},
				{"client", 0, "F.", 36 * time.Millisecond, 36 * time.Millisecond},
				{"server", 0, ".", 36 * time.Millisecond, 36 * time.Millisecond},
			},
		},
		{
			// Nagle on a reused connection: the second small write waits
			// for the delayed ACK of the first.
			Name: "nagle_two_small_writes",
			Warm: true,
			Steps: []ScriptStep{
				{0, "client", "write", 100},
				{0, "client", "write", 100},
			},
			Segs: []ScriptSeg{
				{"client", 100, "P.", 0, 0},
				{"server", 0, ".", 40 * time.Millisecond, 44 * time.Millisecond},
				{"client", 100, "P.", 40 * time.Millisecond, 44 * time.Millisecond},
				// The timer took the server out of pingpong, so reading
				// the pushed segment ACKs it (tcp_cleanup_rbuf).
				{"server", 0, ".", 40 * time.Millisecond, 44 * time.Millisecond},
			},
		},
		{
			// TCP_CORK holds a partial segment; uncorking pushes it.
			Name: "cork_uncork",
			Steps: []ScriptStep{
				{0, "client", "cork", 0},
				{0, "client", "write", 500},
				{50 * time.Millisecond, "client", "uncork", 0},
			},
			Segs: []ScriptSeg{
				{"client", 500, "P.", 50 * time.Millisecond, 50 * time.Millisecond},
				{"server", 0, ".", 50 * time.Millisecond, 50 * time.Millisecond},
			},
		},
	}
}
