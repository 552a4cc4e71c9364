package real

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"xceiver/sim"
)

// The simulator's packetdrill-style scripts on real loopback: the kernel's
// segments are captured from lo with an AF_PACKET socket, which needs
// CAP_NET_RAW; without it the test skips. Real timers are late by
// scheduling, so each window is widened by 20 ms at its end (and 1 ms at
// its start for clock granularity).

type capSeg struct {
	t     time.Time
	sport int
	dport int
	len   int
	flags string
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// portFilter is a classic BPF program keeping only the TCP/IPv4 segments
// lo receives (not its outgoing copies) to or from port: the kernel then
// queues this test's segments alone, not the loopback traffic of the
// tests running beside it (go test ./... runs packages at once), which
// overflowed the socket's queue and dropped the script's segments.
func portFilter(port int) []unix.SockFilter {
	const skfAdPkttype = -0x1000 + 4 // SKF_AD_OFF + SKF_AD_PKTTYPE
	p := uint32(port)
	return []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: uint32(skfAdPkttype & 0xffffffff)},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 10, K: unix.PACKET_OUTGOING},
		{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 12},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jf: 8, K: unix.ETH_P_IP},
		{Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: 23},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jf: 6, K: unix.IPPROTO_TCP},
		{Code: unix.BPF_LDX | unix.BPF_B | unix.BPF_MSH, K: 14},
		{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_IND, K: 14},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 2, K: p},
		{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_IND, K: 16},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: p},
		{Code: unix.BPF_RET | unix.BPF_K, K: 1 << 18},
		{Code: unix.BPF_RET | unix.BPF_K, K: 0},
	}
}

// capture reads the TCP segments lo receives to or from port until stop
// is called; dropped reports how many of them the kernel dropped, its
// queue full, up to then.
func capture(t *testing.T, port int) (segs func() []capSeg, stop func(), dropped func() uint32) {
	// Protocol 0: the socket receives nothing until bind names one, so
	// no segment comes in unfiltered before the filter is attached.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			t.Skipf("capturing lo needs CAP_NET_RAW: %v", err)
		}
		t.Fatalf("AF_PACKET socket: %v", err)
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		unix.Close(fd)
		t.Skipf("no lo: %v", err)
	}
	prog := portFilter(port)
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}); err != nil {
		unix.Close(fd)
		t.Fatalf("attach filter: %v", err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 4<<20)
	// The kernel's receive time of each segment: the reader below may be
	// descheduled for milliseconds on a loaded machine, and its clock
	// read at the recvmsg then stamped two segments 9 ms late at once.
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: lo.Index}); err != nil {
		unix.Close(fd)
		t.Fatalf("bind lo: %v", err)
	}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 50000})
	var mu sync.Mutex
	var out []capSeg
	done := make(chan struct{})
	quit := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1<<17)
		oob := make([]byte, 256)
		for {
			select {
			case <-quit:
				return
			default:
			}
			// The filter passes only the received copy (lo shows each
			// packet twice) of an IPv4 TCP segment of this connection.
			n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, 0)
			if err != nil || n < 14+20+20 {
				continue
			}
			at := receivedAt(oob[:oobn])
			p := buf[14:n]
			ihl := int(p[0]&15) * 4
			total := int(binary.BigEndian.Uint16(p[2:]))
			tcp := p[ihl:]
			doff := int(tcp[12]>>4) * 4
			fl := tcp[13]
			var f strings.Builder
			for _, x := range []struct {
				bit byte
				c   byte
			}{{0x02, 'S'}, {0x01, 'F'}, {0x04, 'R'}, {0x08, 'P'}, {0x10, '.'}} {
				if fl&x.bit != 0 {
					f.WriteByte(x.c)
				}
			}
			mu.Lock()
			out = append(out, capSeg{t: at, sport: int(binary.BigEndian.Uint16(tcp[0:])), dport: int(binary.BigEndian.Uint16(tcp[2:])),
				len: total - ihl - doff, flags: f.String()})
			mu.Unlock()
		}
	}()
	// segs is read after stop, when the capture goroutine has ended.
	var once sync.Once
	var drops uint32
	return func() []capSeg { mu.Lock(); defer mu.Unlock(); return out }, func() {
			once.Do(func() {
				close(quit)
				<-done
				// Counted since the last read of the counters: this is
				// the first, so since the socket's start.
				if st, err := unix.GetsockoptTpacketStats(fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
					drops = st.Drops
				}
				unix.Close(fd)
			})
		}, func() uint32 {
			return drops
		}
}

// receivedAt is the kernel's receive time in a recvmsg's control
// messages (SO_TIMESTAMPNS), or now if it gave none.
func receivedAt(oob []byte) time.Time {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Now()
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS {
			var ts unix.Timespec
			if binary.Read(bytes.NewReader(m.Data), binary.NativeEndian, &ts) == nil {
				return time.Unix(ts.Unix())
			}
		}
	}
	return time.Now()
}

func setsock(c *net.TCPConn, level, opt, v int) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), level, opt, v) })
	return serr
}

func sendMore(c *net.TCPConn, b []byte) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	raw.Write(func(fd uintptr) bool {
		_, serr = unix.SendmsgN(int(fd), b, nil, nil, unix.MSG_MORE)
		return serr != unix.EAGAIN
	})
	return serr
}

// scriptSlack is how late a step may run and still follow the script:
// half a jiffy. A later step changes which rules apply (a FIN 25 ms late
// meets a delayed-ACK timer about to expire, and is ACKed at once).
const scriptSlack = 2 * time.Millisecond

func runRealScript(t *testing.T, sc sim.Script) {
	if sc.NotReal != "" {
		t.Skip(sc.NotReal)
	}
	// On a loaded machine a step can run late; the run then did not
	// follow the script and says nothing about it. So can a reader (the
	// ends' io.Copy). A capture whose queue overflowed lost segments
	// (fin_after_data saw 3, not 4, in a CI run: other packages' tests
	// filled lo); it now takes this connection's alone and counts its
	// drops, and a try with drops counts as late. Try again, a few times:
	// the kernel's rules differing from the script's give the same
	// segments on every try on time, so a script fails when no try
	// matched and one on time did not.
	var late string
	var mismatch []string
	for try := 0; try < 4; try++ {
		var errs []string
		late, errs = runRealScriptOnce(t, sc)
		switch {
		case late != "":
			t.Logf("try %d: %s", try+1, late)
		case len(errs) == 0:
			return
		default:
			mismatch = errs
			t.Logf("try %d: %d mismatches, the first: %s", try+1, len(errs), errs[0])
		}
	}
	if mismatch != nil {
		for _, e := range mismatch {
			t.Error(e)
		}
		return
	}
	t.Skipf("the machine is too loaded to keep the script's timing: %s", late)
}

// runRealScriptOnce runs sc once. It reports a step that ran late instead
// of checking segments, else every mismatch.
func runRealScriptOnce(t *testing.T, sc sim.Script) (late string, errs []string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	segs, stop, dropped := capture(t, ln.Addr().(*net.TCPAddr).Port)
	defer stop()
	acc := make(chan *net.TCPConn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			acc <- c.(*net.TCPConn)
		}
		close(acc)
	}()
	cc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cli := cc.(*net.TCPConn)
	srv := <-acc
	if srv == nil {
		t.Fatal("accept failed")
	}
	defer cli.Close()
	defer srv.Close()
	for _, c := range []*net.TCPConn{cli, srv} {
		c.SetNoDelay(false) // Go's default would hide Nagle
	}
	cport := cli.LocalAddr().(*net.TCPAddr).Port
	// Both ends read everything, as the harness's do.
	for _, c := range []*net.TCPConn{cli, srv} {
		go io.Copy(io.Discard, c)
	}
	if sc.Warm {
		cli.Write(make([]byte, 10))
		time.Sleep(time.Millisecond)
		srv.Write(make([]byte, 10))
		time.Sleep(100 * time.Millisecond)
	}
	// Let the capture catch up with the handshake and warm-up, and count
	// this connection's segments so far: the script's come after them.
	time.Sleep(50 * time.Millisecond)
	mine := func(s capSeg) bool { return s.sport == cport || s.dport == cport }
	from := 0
	for _, s := range segs() {
		if mine(s) {
			from++
		}
	}
	if from == 0 {
		// Not even the handshake yet: the capture is behind (a loaded
		// machine, the race detector), and would miss the script's
		// segments too (a CI run saw none of them).
		return "the capture saw none of the handshake in 50 ms", nil
	}
	t0 := time.Now()
	ends := map[string]*net.TCPConn{"client": cli, "server": srv}
	for _, st := range sc.Steps {
		time.Sleep(time.Until(t0.Add(st.At)))
		if d := time.Since(t0) - st.At; d > scriptSlack {
			return fmt.Sprintf("%s %s ran %v late", st.Who, st.Op, d.Round(10*time.Microsecond)), nil
		}
		c := ends[st.Who]
		var err error
		switch st.Op {
		case "write":
			_, err = c.Write(make([]byte, st.N))
		case "more":
			err = sendMore(c, make([]byte, st.N))
		case "cork":
			err = setsock(c, unix.IPPROTO_TCP, unix.TCP_CORK, 1)
		case "uncork":
			err = setsock(c, unix.IPPROTO_TCP, unix.TCP_CORK, 0)
		case "nodelay":
			err = c.SetNoDelay(st.N != 0)
		case "shutdown":
			err = c.CloseWrite()
		default:
			t.Fatalf("unknown op %q", st.Op)
		}
		if err != nil && !errors.Is(err, syscall.EAGAIN) {
			t.Fatalf("%s %s: %v", st.Who, st.Op, err)
		}
		if d := time.Since(t0) - st.At; d > scriptSlack {
			return fmt.Sprintf("%s %s returned %v late", st.Who, st.Op, d.Round(10*time.Microsecond)), nil
		}
	}
	time.Sleep(time.Until(t0.Add(time.Second)))
	stop()
	if n := dropped(); n > 0 {
		return fmt.Sprintf("the capture's queue overflowed: %d segments dropped", n), nil
	}
	var got []capSeg
	var lines []string
	for _, s := range segs() {
		if !mine(s) {
			continue
		}
		if from > 0 {
			from--
			continue
		}
		got = append(got, s)
		who := "server"
		if s.sport == cport {
			who = "client"
		}
		lines = append(lines, fmt.Sprintf("%v %s len %d %s", s.t.Sub(t0).Round(10*time.Microsecond), who, s.len, s.flags))
	}
	if len(got) != len(sc.Segs) {
		return "", []string{fmt.Sprintf("%d segments, want %d:\n%s", len(got), len(sc.Segs), strings.Join(lines, "\n"))}
	}
	for i, want := range sc.Segs {
		s := got[i]
		who := "server"
		if s.sport == cport {
			who = "client"
		}
		d := s.t.Sub(t0)
		// Segments, sizes and flags are exact; times only bounded: no
		// timer fires early, but on a loaded machine one fires late, so
		// the upper bound is generous (the sim run checks the exact window).
		if who != want.From || s.len != want.Len || s.flags != want.Flags || d < want.Lo-time.Millisecond || d > 2*want.Hi+100*time.Millisecond {
			errs = append(errs, fmt.Sprintf("segment %d: %s, want %s len %d %s in [%v, %v]", i, lines[i], want.From, want.Len, want.Flags, want.Lo, want.Hi))
		}
	}
	return "", errs
}

func TestScriptsOnLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("real timers: a few seconds")
	}
	for _, sc := range sim.Scripts() {
		t.Run(sc.Name, func(t *testing.T) { runRealScript(t, sc) })
	}
}
