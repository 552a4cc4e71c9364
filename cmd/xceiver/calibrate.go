package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"xceiver/model"
	"xceiver/real"
	"xceiver/sim"
)

func calibrateCommand() *command {
	return &command{
		name:    "calibrate",
		summary: "measure this machine's syscall, copy, CRC32C, wake-up, connection and rpc per-call costs, and how long a Go thread waits for a CPU, and write a profile for the simulator's CPU model",
		about: func() string {
			return "Writes the profile as JSON (to --out, or stdout); run, validate and bench load it with\n--profile FILE. Takes about 8 s a round. Figures on a shared machine are noisy: single rounds\ndiffer by up to 2× and more in some figures, so --rounds 5 (each figure the median) is steadier."
		},
		example: []string{"xceiver calibrate --out profile.json", "xceiver calibrate --rounds 5 --out profile.json"},
		setup: func(c *call) func([]string) int {
			out := c.fs.String("out", "", "write the profile to `FILE` instead of stdout")
			rounds := c.fs.Int("rounds", 1, "measure `N` times (1 to 20, about 8 s each) and keep each figure's median (of an even N, the mean of the middle two)")
			return func(rest []string) int {
				if len(rest) > 0 {
					return report(c.stderr, c.usagef("unexpected argument %q", rest[0]))
				}
				if *rounds < 1 || *rounds > maxCalibrateRounds {
					return report(c.stderr, c.usagef("--rounds %d: want 1 to %d", *rounds, maxCalibrateRounds))
				}
				if *out != "" {
					// Before the rounds, not after minutes of them.
					if err := checkOutFile(*out); err != nil {
						return report(c.stderr, c.usagef("--out: %v", err))
					}
				}
				if dryRun {
					return exitOK
				}
				if v := os.Getenv(real.LateEnv); v != "" {
					// A profile outlives the run: its costs would carry
					// the late loops as this machine's.
					return report(c.stderr, c.usagef("%s=%q makes the real world's loops late on purpose: unset it to measure this machine", real.LateEnv, v))
				}
				p, err := measureRounds(*rounds, nil, c.stderr)
				if err != nil {
					return report(c.stderr, fmt.Errorf("calibrate: %w", err))
				}
				b, _ := json.MarshalIndent(p, "", "  ")
				b = append(b, '\n')
				if *out == "" {
					c.stdout.Write(b)
					return exitOK
				}
				if err := os.WriteFile(*out, b, 0o644); err != nil {
					// The measurements are not lost with the file, unless
					// stdout fails too (run then says so).
					if _, werr := c.stdout.Write(b); werr != nil {
						return report(c.stderr, fmt.Errorf("calibrate: %w", err))
					}
					return report(c.stderr, fmt.Errorf("calibrate: %w (the profile is printed above)", err))
				}
				return exitOK
			}
		},
	}
}

// maxProfileBytes bounds a profile file: calibrate's are about 3 KB.
const maxProfileBytes = 1 << 20

// profilePath is the file --profile names: none for the embedded one
// ("" or "embedded", even with a file of that name in the directory).
func profilePath(profile string) string {
	if profile == profileEmbedded {
		return ""
	}
	return profile
}

// loadProfile reads --profile; "" and "embedded" (profileEmbedded) are
// the embedded default.
func loadProfile(path string) (sim.Profile, error) {
	if profilePath(path) == "" {
		return sim.DefaultProfile(), nil
	}
	b, err := readInput(path, maxProfileBytes)
	if err != nil {
		return sim.Profile{}, usagef("--profile: %v", err)
	}
	p, err := sim.ParseProfile(b)
	if err != nil {
		return sim.Profile{}, usagef("--profile %s: %v", path, err)
	}
	return p, nil
}

// calibrateToTemp measures this machine into a temporary profile file;
// cleanup removes it.
func calibrateToTemp() (path string, cleanup func(), err error) {
	p, err := calibrate()
	if err != nil {
		return "", nil, err
	}
	f, err := os.CreateTemp("", "xceiver-profile-*.json")
	if err != nil {
		return "", nil, err
	}
	b, _ := json.Marshal(p)
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	cleanup = func() { os.Remove(f.Name()) }
	if werr != nil {
		cleanup()
		return "", nil, werr
	}
	return f.Name(), cleanup, nil
}

// profileSummary is one line on what a profile file says of the machine's
// share and costs.
func profileSummary(path string) string {
	p, err := loadProfile(path)
	if err != nil {
		return err.Error()
	}
	s := fmt.Sprintf("%s; %.2f cores available, slices %.2f ms with gaps of %.2f ms, wake-up %.1f µs CPU, loopback %.0f+%.0f ns/KiB (sender+reader)",
		p.Note, p.AvailableCores, p.SliceOnNs/1e6, p.SliceOffNs/1e6, p.WakeupCPUNs/1e3, p.LoopbackSendPerKBNs, p.LoopbackRecvPerKBNs)
	if p.TCPDialNs > 0 || p.TCPAcceptNs > 0 {
		s += fmt.Sprintf(", a connection %.1f+%.1f µs (dialer+acceptor) beyond its calls", p.TCPDialNs/1e3, p.TCPAcceptNs/1e3)
	}
	if p.StackWaitNs > 0 {
		s += fmt.Sprintf(", %d goroutine pairs got %.2f cores, their threads waiting %.2f ms a run", stackPairs, p.StackCores, p.StackWaitNs/1e6)
	}
	if p.Callback128ConnsNs > 0 {
		s += fmt.Sprintf(", a callback %.1f/%.1f/%.1f µs more with 8/32/128 connections", p.Callback8ConnsNs/1e3, p.Callback32ConnsNs/1e3, p.Callback128ConnsNs/1e3)
	}
	return s
}

// perOp runs f n times and returns the median of 5 batches, in ns of the
// thread's CPU per call: CPU, not wall time, so a batch in which the
// scheduler ran another process costs what it would have alone (how the
// cores are shared is measured apart, by timeSlices).
func perOp(n int, f func()) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var batches []float64
	for range 5 {
		start := threadCPU()
		for range n {
			f()
		}
		batches = append(batches, float64((threadCPU()-start).Nanoseconds())/float64(n))
	}
	return median(batches)
}

// calibrate measures this machine once.
func calibrate() (sim.Profile, error) { return measureRounds(1, nil, io.Discard) }

// maxCalibrateRounds bounds calibrate --rounds (about 8 s a round).
const maxCalibrateRounds = 20

// measureRounds measures this machine n times (everything, or with
// waitsFrom the costs only, the waits copied from it) and keeps each
// figure's median (medianProfile); one round is a calibration as it is.
// On the 2-core VM of 2 December four single rounds a minute apart, the
// machine otherwise idle, differed by 1.2–1.6× in the syscall costs,
// 2.2–2.6× in the dial and the compare, and 3.7–4× in the wake-up's
// median and the 32-connection callback; a profile from one round moved
// validate's simulated throughputs by as much (calibrate --rounds). With
// n > 1 it reports each round on progress as it ends.
func measureRounds(n int, waitsFrom *sim.Profile, progress io.Writer) (sim.Profile, error) {
	ps := make([]sim.Profile, 0, n)
	var dials, accepts []float64
	for i := range n {
		p, err := measureCosts(waitsFrom)
		if err == nil {
			var d, a float64
			d, a, err = connectReal()
			dials, accepts = append(dials, d), append(accepts, a)
		}
		if err != nil {
			if n == 1 {
				return sim.Profile{}, err
			}
			return sim.Profile{}, fmt.Errorf("round %d of %d: %w", i+1, n, err)
		}
		ps = append(ps, p)
		if n > 1 {
			fmt.Fprintf(progress, "calibrate: round %d of %d done\n", i+1, n)
		}
	}
	m := ps[0]
	if n > 1 {
		m = medianProfile(ps)
	}
	// A dial's and an accept's extra are real less sim, the sim with the
	// other costs: a round's would pair figures of that round only, and
	// their medians figures no round measured together. The real sides'
	// medians are set once against the sim with the median costs.
	var err error
	if m.TCPDialNs, m.TCPAcceptNs, err = connectExtra(m, median(dials), median(accepts)); err != nil {
		return sim.Profile{}, err
	}
	return m, nil
}

// medianProfile is the profile whose every measured figure (each float64
// field) is the median of ps's (median: of an even count, the mean of
// the middle two, as for the connect probe's real sides). A median per
// figure keeps percentiles in order: p10 ≤ p50 ≤ p90 in every round
// stays so. The machine and version are the first's, and the note says
// which rounds it summarises.
func medianProfile(ps []sim.Profile) sim.Profile {
	out := ps[0]
	v := reflect.ValueOf(&out).Elem()
	vals := make([]float64, len(ps))
	for f := range v.NumField() {
		if v.Field(f).Kind() != reflect.Float64 {
			continue
		}
		for i := range ps {
			vals[i] = reflect.ValueOf(ps[i]).Field(f).Float()
		}
		v.Field(f).SetFloat(median(vals))
	}
	const measured = "measured by xceiver calibrate "
	out.Note = fmt.Sprintf("measured by xceiver calibrate, each figure the median of %d rounds (the first %s; the last %s)", len(ps),
		strings.TrimPrefix(ps[0].Note, measured), strings.TrimPrefix(ps[len(ps)-1].Note, measured))
	return out
}

// calibrateCosts measures only what the CPU model charges as work, not
// most waits (the syscall hold, the stack probe, time slices, wake-ups
// under load): the figures Profile.SpeedRatio compares, in 4 to 7 s
// rather than 9. The connect probe's sim run, which the dial and accept
// figures are net of, gets those waits from waits (the profile the
// figures will be compared with), as a full calibration gives it its
// own: with none, its loops would run without the machine's gaps.
func calibrateCosts(waits sim.Profile) (sim.Profile, error) {
	p, err := measureRounds(1, &waits, io.Discard)
	if err != nil {
		return p, err
	}
	p.Note += "; the costs only, the waits copied (calibrateCosts)"
	return p, nil
}

// measureCosts measures everything but the connect probe (connectReal,
// connectExtra), which subtracts what the sim charges with these costs.
func measureCosts(waitsFrom *sim.Profile) (sim.Profile, error) {
	p := sim.Profile{Version: sim.ProfileVersion, Cores: runtime.NumCPU()}
	p.Machine = fmt.Sprintf("%s/%s, %d cores, %s", runtime.GOOS, runtime.GOARCH, p.Cores, cpuModel())
	p.Note = "measured by xceiver calibrate at " + time.Now().UTC().Format(time.RFC3339)
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			// The machine's load says how much of it other processes
			// had while this was measured.
			p.Note += ", load average " + f[0]
		}
	}

	var fds [2]int
	if err := unix.Pipe(fds[:]); err != nil {
		return p, fmt.Errorf("pipe: %w", err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	one := []byte{1}
	p.WriteNs = perOp(2000, func() { unix.Write(fds[1], one) })
	// Each batch wrote 2000 bytes: drain them while timing reads.
	p.ReadNs = perOp(2000, func() { unix.Read(fds[0], one) })

	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return p, fmt.Errorf("epoll_create: %w", err)
	}
	defer unix.Close(ep)
	evs := make([]unix.EpollEvent, 16)
	p.EpollWaitNs = perOp(5000, func() { unix.EpollWait(ep, evs, 0) })

	dir, err := os.MkdirTemp("", "xceiver-calibrate")
	if err != nil {
		return p, err
	}
	defer os.RemoveAll(dir)
	const fileSize = 4 << 20
	data := make([]byte, fileSize)
	for i := range data {
		data[i] = byte(i * 7)
	}
	path := filepath.Join(dir, "block")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return p, err
	}
	f, err := os.Open(path)
	if err != nil {
		return p, err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	off := int64(0)
	p.PreadNs = perOp(2000, func() {
		unix.Pread(int(f.Fd()), buf[:4096], off)
		off = (off + 4096) % fileSize
	})

	if p.SendfilePerKBNs, err = sendfileCost(f, fileSize); err != nil {
		return p, err
	}

	src, dst := make([]byte, 1<<20), make([]byte, 1<<20)
	p.CopyPerKBNs = perOp(200, func() { copy(dst, src) }) / 1024
	tab := crc32.MakeTable(crc32.Castagnoli)
	p.CRC32CPerKBNs = perOp(200, func() { crc32.Checksum(src, tab) }) / 1024

	// The loopback stream's sendfile runs send a file the size of run
	// read's blocks together (8 × 1 MiB), which the caches do not hold
	// whole either.
	blocks := filepath.Join(dir, "blocks")
	if err := os.WriteFile(blocks, slices.Concat(data, data), 0o600); err != nil {
		return p, err
	}
	bf, err := os.Open(blocks)
	if err != nil {
		return p, err
	}
	defer bf.Close()
	if p.LoopbackSendPerKBNs, p.LoopbackRecvPerKBNs, p.LoopbackSendfilePerKBNs, p.LoopbackSendfileRecvPerKBNs, err = loopbackCost(bf); err != nil {
		return p, err
	}
	if p.LoopCallbackNs, p.AccountCPUNs, err = loopCallbackCost(20000); err != nil {
		return p, err
	}
	p.ComparePerKBNs = compareCost()
	p.AllocPerKBNs = allocCost()
	if p.PageFaultNs, err = pageFaultCost(); err != nil {
		return p, err
	}
	if p.SpawnNs, p.LoopStartNs, err = spawnCost(64); err != nil {
		return p, err
	}
	if err := rpcCosts(&p); err != nil {
		return p, err
	}

	sys := (p.ReadNs + p.WriteNs)
	// Both goroutines' CPU, per hop: what one wake-up costs the machine
	// beyond the latency, the eventfd write and read included; and the
	// same over TCP. They alternate, three rounds, and each keeps its
	// median, so the difference (a segment's cost) is from the same
	// moments of a shared machine.
	var w, evCPU, tcpCPU, wakeWrite []float64
	for range 3 {
		c0 := processCPU()
		w = append(w, wakeups(1000, 0)...)
		evCPU = append(evCPU, float64((processCPU()-c0).Nanoseconds())/float64(2*1000))
		hop, write, err := tcpHops(1000)
		if err != nil {
			return p, err
		}
		tcpCPU, wakeWrite = append(tcpCPU, hop), append(wakeWrite, write)
	}
	p.TCPWakeWriteNs = median(wakeWrite)
	slices.Sort(w)
	p.WakeupCPUNs, p.TCPHopCPUNs = median(evCPU), median(tcpCPU)
	p.WakeupP10Ns, p.WakeupP50Ns, p.WakeupP90Ns = pct(w, 10, sys), pct(w, 50, sys), pct(w, 90, sys)
	// The poller's wake-ups are waits too, measured even for the costs:
	// they decide which wake-ups the connect probe's sim run charges.
	if err := pollerWakes(&p); err != nil {
		return p, err
	}
	if waitsFrom == nil {
		if err := measureWaits(&p, sys); err != nil {
			return p, err
		}
	} else {
		from := waitsFrom
		p.SyscallHoldP10Ns, p.SyscallHoldP50Ns, p.SyscallHoldP90Ns = from.SyscallHoldP10Ns, from.SyscallHoldP50Ns, from.SyscallHoldP90Ns
		p.StackWaitNs, p.StackCores = from.StackWaitNs, from.StackCores
		p.SliceOnNs, p.SliceOffNs, p.AvailableCores = from.SliceOnNs, from.SliceOffNs, from.AvailableCores
		p.LoadedWakeupP50Ns, p.LoadedWakeupP90Ns = from.LoadedWakeupP50Ns, from.LoadedWakeupP90Ns
	}
	if err := pairsCosts(&p); err != nil {
		return p, err
	}
	return p, nil
}

// measureWaits measures what the CPU model takes as waits, not work:
// how long an idle loop held its processor, the stack probe, the time
// slices the machine gave, and wake-ups under load.
func measureWaits(p *sim.Profile, sys float64) error {
	hold, err := syscallHold(300)
	if err != nil {
		return err
	}
	p.SyscallHoldP10Ns, p.SyscallHoldP50Ns, p.SyscallHoldP90Ns = pct(hold, 10, 0), pct(hold, 50, 0), pct(hold, 90, 0)
	switch wait, cores, err := stackProbes(); {
	case errors.Is(err, errNoSchedstat):
		// Not measured: the sim runs threads handed work on an idle
		// core at once.
		p.Note += "; no schedstat, stack probe not run"
	case err != nil:
		return err
	default:
		p.StackWaitNs, p.StackCores = wait, cores
	}
	sliceOn, sliceOff, cores := timeSlices(300 * time.Millisecond)
	p.SliceOnNs, p.SliceOffNs, p.AvailableCores = float64(sliceOn.Nanoseconds()), float64(sliceOff.Nanoseconds()), cores
	lw := wakeups(400, 2*runtime.NumCPU())
	p.LoadedWakeupP50Ns, p.LoadedWakeupP90Ns = pct(lw, 50, sys), pct(lw, 90, sys)
	return nil
}

func pct(v []float64, q int, less float64) float64 {
	x := v[(len(v)-1)*q/100] - less
	return max(x, 0)
}

// loopbackCost streams 64 MiB over loopback TCP in 64 KiB blocking
// writes to a reader with a 64 KiB buffer, each end on its own locked
// thread, and returns the CPU each thread spent per KiB (user and system:
// its copy, the TCP stack, which on loopback runs the receiver's input in
// the sender's softirq, and its own wake-ups); then the sender's and the
// reader's CPU per KiB of the same stream sent from src, a cached file,
// with 64 KiB sendfile calls (the reader copies from the file's pages,
// which no one has touched since they were cached, where the written
// stream's reader copies what the writer just copied); the medians of three runs, write and sendfile runs
// alternating so both see the same machine.
func loopbackCost(src *os.File) (send, recv, sendfile, sendfileRecv float64, err error) {
	var sends, recvs, sendfiles, sfRecvs []float64
	for range 3 {
		s, r, err := loopbackRun(64<<20, nil)
		if err != nil {
			return 0, 0, 0, 0, fmt.Errorf("loopback: %w", err)
		}
		sf, sfr, err := loopbackRun(64<<20, src)
		if err != nil {
			return 0, 0, 0, 0, fmt.Errorf("loopback sendfile: %w", err)
		}
		sends, recvs, sendfiles, sfRecvs = append(sends, s), append(recvs, r), append(sendfiles, sf), append(sfRecvs, sfr)
	}
	return median(sends), median(recvs), median(sendfiles), median(sfRecvs), nil
}

// loopbackRun sends total bytes: written from a buffer, or with sendfile
// from src (read from its start again at its end) if src is set.
func loopbackRun(total int, src *os.File) (send, recv float64, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer ln.Close()
	type result struct {
		cpu time.Duration
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer c.Close()
		var res result
		res.err = blockingFD(c, func(fd int) error {
			buf := make([]byte, 64<<10)
			t0 := threadCPU()
			for {
				n, err := unix.Read(fd, buf)
				if err == unix.EINTR {
					continue
				}
				if err != nil {
					return err
				}
				if n == 0 {
					res.cpu = threadCPU() - t0
					return nil
				}
			}
		})
		done <- res
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, 0, err
	}
	runtime.LockOSThread()
	var cpu time.Duration
	werr := blockingFD(c, func(fd int) error {
		buf := make([]byte, 64<<10)
		var size int64
		if src != nil {
			st, err := src.Stat()
			if err != nil {
				return err
			}
			size = st.Size()
		}
		var off int64
		t0 := threadCPU()
		for sent := 0; sent < total; {
			var n int
			var err error
			if src != nil {
				if off >= size {
					off = 0
				}
				n, err = unix.Sendfile(fd, int(src.Fd()), &off, int(min(64<<10, size-off)))
			} else {
				n, err = unix.Write(fd, buf)
			}
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return err
			}
			sent += n
		}
		cpu = threadCPU() - t0
		return nil
	})
	runtime.UnlockOSThread()
	c.Close()
	r := <-done
	if werr != nil {
		return 0, 0, werr
	}
	if r.err != nil {
		return 0, 0, r.err
	}
	kb := float64(total >> 10)
	return float64(cpu.Nanoseconds()) / kb, float64(r.cpu.Nanoseconds()) / kb, nil
}

// blockingFD runs f on c's fd switched to blocking mode, so each call
// moves what it can and sleeps in the kernel, not in Go's poller.
func blockingFD(c net.Conn, f func(fd int) error) error {
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := raw.Control(func(fd uintptr) {
		if ferr = unix.SetNonblock(int(fd), false); ferr == nil {
			ferr = f(int(fd))
		}
	}); err != nil {
		return err
	}
	return ferr
}

// sliceGap is the shortest pause of a spinning thread counted as time
// the scheduler gave another process; shorter ones are interrupts.
const sliceGap = 50 * time.Microsecond

// timeSlices spins one locked thread per core for d. Each watches the
// clock: a pause of sliceGap or more is a gap in which another process
// had the core, the time between gaps a slice this process ran. It
// returns the mean slice and gap over every thread (gap 0 on an idle
// machine) and the CPU the threads got, in cores: the core count on an
// idle machine, what is left of it on a shared one.
func timeSlices(d time.Duration) (on, off time.Duration, cores float64) {
	n := runtime.NumCPU()
	type tally struct {
		cpu, on, off time.Duration
		gaps         int
	}
	got := make(chan tally, n)
	start := time.Now()
	for range n {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var t tally
			c0 := threadCPU()
			last := time.Now()
			from := last
			for last.Sub(start) < d {
				now := time.Now()
				if gap := now.Sub(last); gap >= sliceGap {
					t.on += last.Sub(from)
					t.off += gap
					t.gaps++
					from = now
				}
				last = now
			}
			t.on += last.Sub(from)
			t.cpu = threadCPU() - c0
			got <- t
		}()
	}
	var sum tally
	for range n {
		t := <-got
		sum.cpu += t.cpu
		sum.on += t.on
		sum.off += t.off
		sum.gaps += t.gaps
	}
	cores = sum.cpu.Seconds() / time.Since(start).Seconds()
	if sum.gaps == 0 {
		return sum.on / time.Duration(n), 0, cores
	}
	// n threads' runs end in gaps, or at the end of the measurement.
	return sum.on / time.Duration(sum.gaps+n), sum.off / time.Duration(sum.gaps), cores
}

// threadCPU is the calling thread's CPU time so far (user and system).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// sendfileCost sends the file over loopback TCP to a reader that
// discards it, in 64 KiB sendfile calls.
func sendfileCost(f *os.File, size int64) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		_, err = io.Copy(io.Discard, c)
		c.Close()
		done <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		c.Close()
		return 0, err
	}
	var total time.Duration
	var sent int64
	var serr error
	raw.Control(func(fd uintptr) {
		// Blocking sends, so each call moves a whole 64 KiB.
		unix.SetNonblock(int(fd), false)
		start := time.Now()
		for pass := 0; pass < 4; pass++ {
			for off := int64(0); off < size; {
				o := off
				n, err := unix.Sendfile(int(fd), int(f.Fd()), &o, 64<<10)
				if err != nil {
					serr = err
					return
				}
				off += int64(n)
				sent += int64(n)
			}
		}
		total = time.Since(start)
	})
	c.Close()
	if err := <-done; err != nil && serr == nil {
		serr = err
	}
	if serr != nil {
		return 0, fmt.Errorf("sendfile: %w", serr)
	}
	return float64(total.Nanoseconds()) / float64(sent/1024), nil
}

// wakeups measures one-way wake-up latency as the real world's loops see
// it: two goroutines, each blocked in epoll_wait on its own eventfd, wake
// each other in turn (the loops are goroutines, not locked threads, so
// this includes Go's scheduler). busy goroutines spin alongside, so with
// more of them than cores a woken loop waits for a processor. Returned
// sorted, in ns per hop (the eventfd write and read included).
func wakeups(n, busy int) []float64 {
	var stop atomic.Bool
	for range busy {
		go func() {
			for !stop.Load() {
			}
		}()
	}
	defer stop.Store(true)
	type waiter struct{ ep, ev int }
	mk := func() (waiter, error) {
		ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return waiter{}, err
		}
		ev, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			unix.Close(ep)
			return waiter{}, err
		}
		unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, ev, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(ev)})
		return waiter{ep, ev}, nil
	}
	a, err := mk()
	if err != nil {
		return []float64{0}
	}
	b, err := mk()
	if err != nil {
		return []float64{0}
	}
	defer func() {
		for _, fd := range []int{a.ep, a.ev, b.ep, b.ev} {
			unix.Close(fd)
		}
	}()
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	wait := func(x waiter) {
		evs := make([]unix.EpollEvent, 1)
		var cnt [8]byte
		for {
			if k, err := unix.EpollWait(x.ep, evs, -1); k == 1 || err != nil && err != unix.EINTR {
				break
			}
		}
		unix.Read(x.ev, cnt[:])
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range n {
			wait(a)
			unix.Write(b.ev, one)
		}
	}()
	out := make([]float64, 0, n)
	for range n {
		start := time.Now()
		unix.Write(a.ev, one)
		wait(b)
		out = append(out, float64(time.Since(start).Nanoseconds())/2)
	}
	<-done
	slices.Sort(out)
	return out
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			if i := strings.IndexByte(l, ':'); i >= 0 {
				return strings.TrimSpace(l[i+1:])
			}
		}
	}
	return "unknown CPU"
}

// tcpHops measures a small request-response exchange as the real world's
// loops make one: two goroutines, each blocked in epoll_wait on its end
// of a loopback TCP connection (non-blocking, TCP_NODELAY), bounce a
// 64-byte message n times. It returns the process CPU per hop (the
// write with the segment's input path on the sender's CPU, the wake-up
// of the blocked reader, its epoll_wait return and read, and Go's
// scheduler in between) and the median thread CPU of the initiator's
// write, which wakes the other end (its thread is held for the clock).
func tcpHops(n int) (hop, write float64, err error) {
	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(lfd)
	if err := unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return 0, 0, fmt.Errorf("bind: %w", err)
	}
	if err := unix.Listen(lfd, 1); err != nil {
		return 0, 0, fmt.Errorf("listen: %w", err)
	}
	sa, err := unix.Getsockname(lfd)
	if err != nil {
		return 0, 0, fmt.Errorf("getsockname: %w", err)
	}
	cfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(cfd)
	if err := unix.Connect(cfd, sa); err != nil {
		return 0, 0, fmt.Errorf("connect: %w", err)
	}
	afd, _, err := unix.Accept4(lfd, unix.SOCK_CLOEXEC)
	if err != nil {
		return 0, 0, fmt.Errorf("accept: %w", err)
	}
	defer unix.Close(afd)
	type end struct{ fd, ep int }
	var ends [2]end
	for i, fd := range []int{cfd, afd} {
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		if err := unix.SetNonblock(fd, true); err != nil {
			return 0, 0, fmt.Errorf("nonblock: %w", err)
		}
		ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return 0, 0, fmt.Errorf("epoll_create: %w", err)
		}
		defer unix.Close(ep)
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			return 0, 0, fmt.Errorf("epoll_ctl: %w", err)
		}
		ends[i] = end{fd, ep}
	}
	msg := make([]byte, 64)
	// bounce waits for a whole message on e and sends one back; false
	// once the peer is gone. Like a loop, it reads once epoll_wait says
	// the socket is readable: one read per message.
	bounce := func(e end, evs []unix.EpollEvent, buf []byte, reply bool) bool {
		got := 0
		for got < len(msg) {
			if _, err := unix.EpollWait(e.ep, evs, -1); err != nil && err != unix.EINTR {
				return false
			}
			k, err := unix.Read(e.fd, buf[got:len(msg)])
			switch {
			case err == unix.EAGAIN || err == unix.EINTR:
				continue
			case err != nil || k == 0:
				return false
			}
			got += k
		}
		if reply {
			unix.Write(e.fd, msg)
		}
		return true
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		evs, buf := make([]unix.EpollEvent, 1), make([]byte, len(msg))
		for range n {
			if !bounce(ends[1], evs, buf, true) {
				return
			}
		}
	}()
	evs, buf := make([]unix.EpollEvent, 1), make([]byte, len(msg))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	writes := make([]float64, 0, n)
	c0 := processCPU()
	for range n {
		t0 := threadCPU()
		unix.Write(ends[0].fd, msg)
		writes = append(writes, float64((threadCPU() - t0).Nanoseconds()))
		if !bounce(ends[0], evs, buf, false) {
			return 0, 0, fmt.Errorf("request-response: the peer closed")
		}
	}
	cpu := processCPU() - c0
	<-done
	return float64(cpu.Nanoseconds()) / float64(2*n), median(writes), nil
}

// syscallHold measures how long a goroutine blocked in a system call
// keeps its processor from a runnable goroutine: with one processor, a
// goroutine started just before another blocks in epoll_wait runs only
// once Go's sysmon takes the processor back (after one to two of its
// ticks, 20 µs or more). The real world's loops block in epoll_wait, so
// each time one goes idle its core is lost to the others that long.
// Returned sorted, in ns.
func syscallHold(n int) ([]float64, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create: %w", err)
	}
	defer unix.Close(ep)
	ev, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	defer unix.Close(ev)
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, ev, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(ev)}); err != nil {
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	evs := make([]unix.EpollEvent, 1)
	var cnt [8]byte
	var out []float64
	for range n {
		var ran time.Time
		done := make(chan struct{})
		start := time.Now()
		go func() {
			ran = time.Now()
			unix.Write(ev, one)
			close(done)
		}()
		for {
			if k, err := unix.EpollWait(ep, evs, -1); k == 1 || err != nil && err != unix.EINTR {
				break
			}
		}
		unix.Read(ev, cnt[:])
		<-done
		out = append(out, float64(ran.Sub(start).Nanoseconds()))
	}
	slices.Sort(out)
	return out, nil
}

// loopCallbackCost is the process CPU per callback of a real-world loop
// that keeps posting to itself: what the real world pays to dispatch one
// callback (an epoll_wait that returns at once, its locks, the world's
// gate, the yield after each batch, here of one callback), the callback
// itself empty; and what accounting each callback's CPU
// (real.Config.AccountCPU, as run read's real runs do) adds to it,
// measured on its own (real.AccountingCost). Three runs of each: the
// medians.
func loopCallbackCost(n int) (callback, account float64, err error) {
	var plain, accounted []float64
	for range 3 {
		c, err := loopCallbackRun(n)
		if err != nil {
			return 0, 0, err
		}
		plain = append(plain, c)
		accounted = append(accounted, float64(real.AccountingCost(n).Nanoseconds()))
	}
	return median(plain), median(accounted), nil
}

func loopCallbackRun(n int) (float64, error) {
	w, err := real.New(real.Config{Seed: 1})
	if err != nil {
		return 0, err
	}
	var c0, c1 time.Duration
	_, err = w.Spawn("calibrate", model.ProcessConfig{}, func(p model.Process) {
		l := p.MainLoop()
		left := n
		var next func()
		next = func() {
			if left--; left > 0 {
				l.Post(next)
				return
			}
			c1 = processCPU()
			p.World().Stop()
		}
		c0 = processCPU()
		l.Post(next)
	})
	if err == nil {
		err = w.Run(time.Minute)
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("loop callbacks: %w", err)
	}
	return float64((c1 - c0).Nanoseconds()) / float64(n), nil
}

// compareCost is the thread CPU per KiB of the read scenario's check of
// what a client read (model.CPUCompare): a 32 KiB buffer, just written
// as a socket read leaves it, compared with bytes.Equal against the same
// bytes at a random place in the scenario's eight 1 MiB blocks. The
// buffer is filled from a second copy of the blocks, so the compared
// content is no warmer than the scenario's; the fill alone is timed the
// same way and taken off.
func compareCost() float64 {
	const blocks, blockSize, size = 8, 1 << 20, 32 << 10
	want, src := make([][]byte, blocks), make([][]byte, blocks)
	for i := range want {
		want[i] = model.BlockContent(uint64(i+1), blockSize)
		src[i] = slices.Clone(want[i])
	}
	buf := make([]byte, size)
	run := func(compare bool) float64 {
		rng := rand.New(rand.NewPCG(1, 2))
		equal := true
		c := perOp(500, func() {
			b, off := rng.IntN(blocks), rng.IntN(blockSize-size+1)
			copy(buf, src[b][off:off+size])
			if compare {
				equal = equal && bytes.Equal(buf, want[b][off:off+size])
			}
		})
		if !equal {
			panic("calibrate: compare probe: the copies differ")
		}
		return c
	}
	var with, without []float64
	for range 3 {
		without = append(without, run(false))
		with = append(with, run(true))
	}
	return max(median(with)-median(without), 0) / (size / 1024)
}

// allocCost is the process CPU per KiB of the buffer a threaded
// connection allocates for each request (model.PacketHeaderLen +
// model.MaxPacketLen + 64 bytes, as HDFS's BlockSender does), a byte
// written in each page of its first 32 KiB (which a 32 KiB packet
// written into it faults in), then dropped, with 16 MiB live as run read's
// block contents are: Go's large allocation, the pages its scavenger
// gave back faulted in again, the collector's share. Process CPU, for the
// collector runs on other threads; the median of three rounds of 5000.
func allocCost() float64 {
	n := model.PacketHeaderLen + model.MaxPacketLen + 64
	live := make([]byte, 16<<20)
	for i := range live {
		live[i] = byte(i)
	}
	var rounds []float64
	for range 3 {
		c0 := processCPU()
		for range 5000 {
			b := make([]byte, 0, n)[:32<<10]
			for j := 0; j < len(b); j += model.PageSize {
				b[j] = 1
			}
			allocSink = b
		}
		rounds = append(rounds, float64((processCPU()-c0).Nanoseconds())/5000/(float64(n)/1024))
	}
	runtime.KeepAlive(live)
	allocSink = nil
	return median(rounds)
}

// allocSink keeps allocCost's buffers from being optimised away.
var allocSink []byte

// pageFaultCost is what a socket read into a fresh 64 KiB Go buffer
// costs beyond one into a buffer already used, per 4 KiB page
// (model.CPUFirstTouch): the kernel maps each page of the fresh buffer as
// it copies into it. Each buffer is mapped afresh (Go would reuse the
// pages of buffers it freed), as a process's first buffers are new
// memory; the median over 64 reads, in wall time (on
// a virtual machine the fault's cost is partly the hypervisor's, which
// the guest's CPU clocks do not see). On the development machine: about
// 10 µs a page, 160 µs for a 64 KiB read buffer's first read, which
// real run tcp-pattern's server shows (its first read 190–320 µs, the
// next ones 4–12).
func pageFaultCost() (float64, error) {
	const size, reads = 64 << 10, 64
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return 0, fmt.Errorf("page-fault probe: socketpair: %w", err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	for _, fd := range fds {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4*size)
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4*size)
	}
	src, warm := make([]byte, size), make([]byte, size)
	readInto := func(b []byte) (time.Duration, error) {
		if _, err := unix.Write(fds[0], src); err != nil {
			return 0, err
		}
		t0 := time.Now()
		for got := 0; got < size; {
			n, err := unix.Read(fds[1], b[got:])
			if err != nil {
				return 0, err
			}
			got += n
		}
		return time.Since(t0), nil
	}
	if _, err := readInto(warm); err != nil {
		return 0, fmt.Errorf("page-fault probe: %w", err)
	}
	var extra []float64
	for range reads {
		fresh, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return 0, fmt.Errorf("page-fault probe: mmap: %w", err)
		}
		f, err := readInto(fresh)
		unix.Munmap(fresh)
		if err != nil {
			return 0, fmt.Errorf("page-fault probe: %w", err)
		}
		w, err := readInto(warm)
		if err != nil {
			return 0, fmt.Errorf("page-fault probe: %w", err)
		}
		extra = append(extra, float64((f-w).Nanoseconds())/float64(model.Pages(size)))
	}
	return max(median(extra), 0), nil
}

// spawnCost is the process CPU of spawning a real-world process (its
// disk directory, its main loop) and of starting one more loop in it,
// per spawn and per loop: n of each in a fresh world made as run's real
// runs make theirs, the fastest of nine runs. (run read spawns its
// clients while it measures.) Process CPU counts every thread, so what
// else runs (a test binary's other goroutines, the collector) only adds
// to a run: with the medians of three runs a CI run once read a spawn at
// 46 µs and a loop at 79, and with those of five, under a loaded CI,
// a spawn below a loop again (the spawn, which starts a loop, is dearer
// than one every other time).
func spawnCost(n int) (spawn, loop float64, err error) {
	var spawns, loops []float64
	for range 9 {
		w, err := real.New(real.Config{Seed: 1})
		if err != nil {
			return 0, 0, err
		}
		procs := make([]model.Process, n)
		c0 := processCPU()
		for i := range procs {
			if procs[i], err = w.Spawn(fmt.Sprintf("p%d", i), model.ProcessConfig{}, nil); err != nil {
				break
			}
		}
		c1 := processCPU()
		for i := 0; err == nil && i < n; i++ {
			_, err = procs[i].NewLoop("extra")
		}
		c2 := processCPU()
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, 0, fmt.Errorf("spawn probe: %w", err)
		}
		spawns = append(spawns, float64((c1-c0).Nanoseconds())/float64(n))
		loops = append(loops, float64((c2-c1).Nanoseconds())/float64(n))
	}
	return slices.Min(spawns), slices.Min(loops), nil
}
