package sim

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// maxProfileCores bounds a profile's counts of cores.
const maxProfileCores = 4096

// Profile is what `xceiver calibrate` measured on a machine: the costs the
// CPU model charges, in nanoseconds. The simulator loads one with
// --profile; the embedded default was measured on the development machine.
type Profile struct {
	Version int    `json:"version"`
	Machine string `json:"machine"` // where it was measured (GOOS/GOARCH, cores, CPU model)
	Cores   int    `json:"cores"`
	Note    string `json:"note,omitempty"`

	ReadNs      float64 `json:"read_ns"`       // read(2) of 1 byte from a pipe with data
	WriteNs     float64 `json:"write_ns"`      // write(2) of 1 byte to a pipe
	EpollWaitNs float64 `json:"epoll_wait_ns"` // epoll_wait(2) that finds nothing, timeout 0
	PreadNs     float64 `json:"pread_ns"`      // pread(2) of 4 KiB from the page cache
	// SendfilePerKBNs is sendfile(2) from a cached file to a loopback TCP
	// socket, per KiB, in wall time with the reader running beside it
	// (the CPU model uses LoopbackSendfilePerKBNs).
	SendfilePerKBNs float64 `json:"sendfile_per_kb_ns"`
	CopyPerKBNs     float64 `json:"copy_per_kb_ns"`   // memory copy
	CRC32CPerKBNs   float64 `json:"crc32c_per_kb_ns"` // hash/crc32 Castagnoli
	// Wake-up latency from one thread's write to a blocked thread's
	// return from read, less the two syscalls: the 10th, 50th and 90th
	// percentiles, on an otherwise idle process.
	WakeupP10Ns float64 `json:"wakeup_p10_ns"`
	WakeupP50Ns float64 `json:"wakeup_p50_ns"`
	WakeupP90Ns float64 `json:"wakeup_p90_ns"`
	// The same with twice as many busy threads as cores: run-queue delay.
	LoadedWakeupP50Ns float64 `json:"loaded_wakeup_p50_ns"`
	LoadedWakeupP90Ns float64 `json:"loaded_wakeup_p90_ns"`
	// LoopbackSendPerKBNs and LoopbackRecvPerKBNs are the CPU of the
	// writing and of the reading thread of a loopback TCP stream in 64 KiB
	// blocking writes and reads, per KiB. On loopback the receiver's
	// input path runs in the sender's softirq, so it is the sender's.
	LoopbackSendPerKBNs float64 `json:"loopback_send_per_kb_ns"`
	LoopbackRecvPerKBNs float64 `json:"loopback_recv_per_kb_ns"`
	// LoopbackSendfilePerKBNs is the sending thread's CPU per KiB of the
	// same stream sent from a cached file with 64 KiB sendfile(2) calls
	// (0: not measured).
	LoopbackSendfilePerKBNs float64 `json:"loopback_sendfile_per_kb_ns,omitempty"`
	// LoopbackSendfileRecvPerKBNs is the reading thread's CPU per KiB of
	// that sendfile stream (0: not measured).
	LoopbackSendfileRecvPerKBNs float64 `json:"loopback_sendfile_recv_per_kb_ns,omitempty"`
	// WakeupCPUNs is the CPU one wake-up costs, waker and woken together
	// (futex or eventfd, the context switches, Go's scheduler).
	WakeupCPUNs float64 `json:"wakeup_cpu_ns"`
	// AvailableCores is the CPU a process with a busy thread per core got,
	// in cores: Cores on an idle machine, less on a shared one.
	AvailableCores float64 `json:"available_cores"`
	// SliceOnNs and SliceOffNs are the mean time a busy thread ran before
	// another process took its core, and the mean time it then waited
	// (0: it never waited 50 µs or more, the machine was this process's).
	SliceOnNs  float64 `json:"slice_on_ns"`
	SliceOffNs float64 `json:"slice_off_ns"`
	// TCPHopCPUNs is the process CPU of one hop of a small loopback TCP
	// request-response between two goroutines blocked in epoll_wait:
	// the write and the segment's input path, the reader's wake-up,
	// epoll_wait return and read, Go's scheduler (0: not measured).
	TCPHopCPUNs float64 `json:"tcp_hop_cpu_ns,omitempty"`
	// TCPWakeWriteNs is the thread CPU of the probe's write, which wakes
	// the blocked reader: the median (0: not measured).
	TCPWakeWriteNs float64 `json:"tcp_wake_write_ns,omitempty"`
	// LoopCallbackNs is the process CPU per callback of a real-world loop
	// posting to itself, the callback empty: its dispatch (0: not
	// measured; epoll_wait_ns stands in).
	LoopCallbackNs float64 `json:"loop_callback_ns,omitempty"`
	// SyscallHoldP10Ns, P50 and P90 are how long a goroutine blocked in
	// epoll_wait kept its processor from a runnable goroutine, until Go's
	// sysmon took it back: percentiles (0: not measured).
	SyscallHoldP10Ns float64 `json:"syscall_hold_p10_ns,omitempty"`
	SyscallHoldP50Ns float64 `json:"syscall_hold_p50_ns,omitempty"`
	SyscallHoldP90Ns float64 `json:"syscall_hold_p90_ns,omitempty"`
	// PollerWakeP10Ns, P50 and P90 are the latency from a write to the
	// callback of a real-world loop parked in Go's poller, while the
	// writer's loop goes idle after it: percentiles. PollerMissedNs is
	// the median of the same latency less the time the writer stays
	// busy after its write: how long after a processor goes idle it
	// runs a loop it finds ready (0: not measured; the loops are then
	// modelled as blocking in epoll_wait, with the hold).
	PollerWakeP10Ns float64 `json:"poller_wake_p10_ns,omitempty"`
	PollerWakeP50Ns float64 `json:"poller_wake_p50_ns,omitempty"`
	PollerWakeP90Ns float64 `json:"poller_wake_p90_ns,omitempty"`
	PollerMissedNs  float64 `json:"poller_missed_ns,omitempty"`
	// StackWaitNs is the mean time a thread of a Go program of eight
	// goroutine pairs ping-ponging 32 KiB over loopback waited in a run
	// queue per time it ran (the threads' schedstat run delay over
	// their run slices), and StackCores the cores that program got:
	// calibrate's stack probe. The CPU model's StackBalance (0: not
	// measured, off).
	StackWaitNs float64 `json:"stack_wait_ns,omitempty"`
	StackCores  float64 `json:"stack_cores,omitempty"`
	// TCPDialNs and TCPAcceptNs are what a loopback TCP connection (a
	// dial, a byte, both ends' close) cost the real world's dialing and
	// accepting processes beyond what the sim charged the same probe
	// with this profile's other costs: calibrate's connect probe, the
	// medians of three real runs (0: not measured).
	TCPDialNs   float64 `json:"tcp_dial_ns,omitempty"`
	TCPAcceptNs float64 `json:"tcp_accept_ns,omitempty"`
	// Callback8ConnsNs, Callback32ConnsNs and Callback128ConnsNs are what
	// each callback costs beyond one with a single connection open, when
	// 8, 32 and 128 are: calibrate's pairs probe (goroutine pairs each
	// trading a 64-byte request for a 32 KiB reply over loopback), the
	// process CPU per exchange with N pairs less with one, over its two
	// callbacks; medians of three runs (0: not measured).
	Callback8ConnsNs   float64 `json:"callback_8_conns_ns,omitempty"`
	Callback32ConnsNs  float64 `json:"callback_32_conns_ns,omitempty"`
	Callback128ConnsNs float64 `json:"callback_128_conns_ns,omitempty"`

	// The rpc server's and namespace's own code, timed on their real
	// messages (0: not measured, the hand-set cost stays): an rpc reader
	// taking one call off its buffer (frame decode, copy, allocation);
	// one namespace message decoded or encoded, or an answer framed; one
	// inode visited, the op's other work on the tree spread over its
	// visits; one block token issued.
	// ComparePerKBNs is the thread CPU per KiB of the read scenario's
	// check of what a client read (bytes.Equal of a just-written buffer
	// against the blocks' content), and AccountCPUNs what the real
	// world's CPU accounting (real.Config.AccountCPU, on in run read)
	// adds to a loop's callback: its wrapper timed on one thread
	// (real.AccountingCost; 0: not measured).
	ComparePerKBNs float64 `json:"compare_per_kb_ns,omitempty"`
	AccountCPUNs   float64 `json:"account_cpu_ns,omitempty"`
	// SpawnNs is the process CPU of spawning a real-world process (its
	// disk directory made, its main loop started), LoopStartNs of
	// starting one more loop in it (an epoll fd, an eventfd, a
	// goroutine): the medians of three runs (0: not measured).
	SpawnNs     float64 `json:"spawn_ns,omitempty"`
	LoopStartNs float64 `json:"loop_start_ns,omitempty"`
	// AllocPerKBNs is the process CPU per KiB of a buffer the size of a
	// threaded connection's per-request packet buffer, allocated, the
	// pages of its first 32 KiB written and dropped, with 16 MiB live: Go's
	// large allocation, its pages faulted in again and the collector's
	// share (0: not measured).
	AllocPerKBNs float64 `json:"alloc_per_kb_ns,omitempty"`
	// PageFaultNs is what mapping a 4 KiB page of fresh memory at its
	// first use costs (model.CPUFirstTouch): a socket read into a freshly
	// mapped 64 KiB buffer less one into a used buffer, per page, in
	// wall time, since on a virtual machine the fault is partly the
	// hypervisor's, which the guest's CPU clocks miss (0: not measured).
	PageFaultNs float64 `json:"page_fault_ns,omitempty"`

	RPCFrameNs float64 `json:"rpc_frame_ns,omitempty"`
	ParseNs    float64 `json:"parse_ns,omitempty"`
	InodeNs    float64 `json:"inode_ns,omitempty"`
	TokenNs    float64 `json:"token_ns,omitempty"`

	// Reference is what calibrate's cost probes measured on the
	// profile's machine while its costs predicted the real runs (by
	// JSON name, costs only):
	// SpeedRatio compares a fresh calibration with it. Absent, the
	// profile's own figures are its reference, as in one calibrate
	// wrote; the embedded profile, whose costs were fitted over many
	// days and machines, needs one.
	Reference map[string]float64 `json:"reference,omitempty"`
}

// profileField is one figure of a profile: its JSON name, its value, and
// whether it is work, which a slower machine does slower (a cost), or a
// wait, a wall time or a count, which SpeedRatio leaves out.
type profileField struct {
	name string
	v    float64
	cost bool
}

// fields lists every figure of p (TestProfileFieldsListEveryFigure keeps
// it whole).
func (p *Profile) fields() []profileField {
	return []profileField{
		{"read_ns", p.ReadNs, true}, {"write_ns", p.WriteNs, true}, {"epoll_wait_ns", p.EpollWaitNs, true},
		// sendfile_per_kb_ns is the wall time of a stream, a reader beside it.
		{"pread_ns", p.PreadNs, true}, {"sendfile_per_kb_ns", p.SendfilePerKBNs, false}, {"copy_per_kb_ns", p.CopyPerKBNs, true},
		{"crc32c_per_kb_ns", p.CRC32CPerKBNs, true}, {"wakeup_p10_ns", p.WakeupP10Ns, false}, {"wakeup_p50_ns", p.WakeupP50Ns, false},
		{"wakeup_p90_ns", p.WakeupP90Ns, false}, {"loaded_wakeup_p50_ns", p.LoadedWakeupP50Ns, false}, {"loaded_wakeup_p90_ns", p.LoadedWakeupP90Ns, false},
		{"loopback_send_per_kb_ns", p.LoopbackSendPerKBNs, true}, {"loopback_recv_per_kb_ns", p.LoopbackRecvPerKBNs, true},
		{"loopback_sendfile_per_kb_ns", p.LoopbackSendfilePerKBNs, true}, {"loopback_sendfile_recv_per_kb_ns", p.LoopbackSendfileRecvPerKBNs, true},
		{"wakeup_cpu_ns", p.WakeupCPUNs, true}, {"available_cores", p.AvailableCores, false},
		{"slice_on_ns", p.SliceOnNs, false}, {"slice_off_ns", p.SliceOffNs, false},
		{"rpc_frame_ns", p.RPCFrameNs, true}, {"parse_ns", p.ParseNs, true}, {"inode_ns", p.InodeNs, true}, {"token_ns", p.TokenNs, true},
		{"tcp_hop_cpu_ns", p.TCPHopCPUNs, true}, {"tcp_wake_write_ns", p.TCPWakeWriteNs, true}, {"loop_callback_ns", p.LoopCallbackNs, true},
		{"syscall_hold_p10_ns", p.SyscallHoldP10Ns, false}, {"syscall_hold_p50_ns", p.SyscallHoldP50Ns, false}, {"syscall_hold_p90_ns", p.SyscallHoldP90Ns, false},
		{"poller_wake_p10_ns", p.PollerWakeP10Ns, false}, {"poller_wake_p50_ns", p.PollerWakeP50Ns, false},
		{"poller_wake_p90_ns", p.PollerWakeP90Ns, false}, {"poller_missed_ns", p.PollerMissedNs, false},
		{"stack_wait_ns", p.StackWaitNs, false}, {"stack_cores", p.StackCores, false},
		{"tcp_dial_ns", p.TCPDialNs, true}, {"tcp_accept_ns", p.TCPAcceptNs, true},
		{"callback_8_conns_ns", p.Callback8ConnsNs, true}, {"callback_32_conns_ns", p.Callback32ConnsNs, true}, {"callback_128_conns_ns", p.Callback128ConnsNs, true},
		{"compare_per_kb_ns", p.ComparePerKBNs, true}, {"account_cpu_ns", p.AccountCPUNs, true},
		{"spawn_ns", p.SpawnNs, true}, {"loop_start_ns", p.LoopStartNs, true}, {"alloc_per_kb_ns", p.AllocPerKBNs, true},
		{"page_fault_ns", p.PageFaultNs, true},
	}
}

// SpeedRatio is how much dearer this machine's work is now, as the
// profile now (a fresh calibration) measured it, than when p's costs
// were fitted: a geometric mean, over the cost probes both measured, of
// now's figure over p's reference (p's own figures if it has none),
// leaving out a quarter of the ratios at each end: about seven probes
// are differences of two runs (the callbacks by connections, the
// connect, the accounting) and come out far off now and then. n is how many
// probes both measured; with none the ratio is 1. It is
// CPUConfig.Scaled's factor for validate --cpu-scale auto: a shared VM
// slows as its neighbours load the memory and caches, and the same
// costs then no longer predict its real runs.
func (p Profile) SpeedRatio(now Profile) (ratio float64, n int) {
	ref := p.Reference
	if ref == nil {
		ref = map[string]float64{}
		for _, f := range p.fields() {
			ref[f.name] = f.v
		}
	}
	var logs []float64
	for _, f := range now.fields() {
		if r := ref[f.name]; f.cost && f.v > 0 && r > 0 {
			logs = append(logs, math.Log(f.v/r))
		}
	}
	n = len(logs)
	if n == 0 {
		return 1, 0
	}
	slices.Sort(logs)
	trim := n / 4
	sum := 0.0
	for _, l := range logs[trim : n-trim] {
		sum += l
	}
	return math.Exp(sum / float64(n-2*trim)), n
}

// ProfileVersion is the layout of Profile.
const ProfileVersion = 1

//go:embed profile_default.json
var defaultProfile []byte

// DefaultProfile is the embedded profile.
func DefaultProfile() Profile {
	p, err := ParseProfile(defaultProfile)
	if err != nil {
		panic("embedded profile: " + err.Error())
	}
	return p
}

// ParseProfile decodes and checks a profile: every cost present, finite
// and not negative, percentiles in order.
func ParseProfile(b []byte) (Profile, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return Profile{}, fmt.Errorf("profile: empty")
	}
	var p Profile
	// A field the profile does not have is a typo or another program's
	// file: refused, not left at zero unseen.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Profile{}, fmt.Errorf("profile: %w", err)
	}
	// More does not see a stray closing bracket; only reaching the end
	// proves nothing follows the object.
	if _, err := dec.Token(); err != io.EOF {
		return Profile{}, fmt.Errorf("profile: more after the profile's JSON object")
	}
	if p.Version != ProfileVersion {
		return Profile{}, fmt.Errorf("profile: version %d, want %d", p.Version, ProfileVersion)
	}
	if p.Cores < 0 || p.Cores > maxProfileCores {
		return Profile{}, fmt.Errorf("profile: cores = %d, want 0 to %d", p.Cores, maxProfileCores)
	}
	costs := map[string]bool{}
	for _, f := range p.fields() {
		costs[f.name] = f.cost
		if strings.HasSuffix(f.name, "_cores") {
			// A count of cores, not a time.
			if math.IsNaN(f.v) || f.v < 0 || f.v > maxProfileCores {
				return Profile{}, fmt.Errorf("profile: %s = %v, want 0 to %d cores", f.name, f.v, maxProfileCores)
			}
			continue
		}
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 || f.v > 1e9 {
			return Profile{}, fmt.Errorf("profile: %s = %v, want a time from 0 to 1 s (in ns)", f.name, f.v)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Reference)) {
		v := p.Reference[name]
		if cost, ok := costs[name]; !ok {
			return Profile{}, fmt.Errorf("profile: reference.%s: not a figure a profile has", name)
		} else if !cost {
			return Profile{}, fmt.Errorf("profile: reference.%s: a wait or a count, not a cost (SpeedRatio compares costs only)", name)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e9 {
			return Profile{}, fmt.Errorf("profile: reference.%s = %v, want a cost from 0 to 1 s", name, v)
		}
	}
	if p.SliceOnNs > 0 && p.SliceOffNs > 0 && (p.SliceOnNs < minSliceOnNs || p.SliceOffNs < float64(MinHostStealGap)) {
		// Calibrate counts waits from 50 µs; slices of nanoseconds
		// made a 0.05 s run take 100 s and 2 GB.
		return Profile{}, fmt.Errorf("profile: slice_on_ns = %v, slice_off_ns = %v: want 0 (the machine alone), or slices of at least %v between waits of at least %v",
			p.SliceOnNs, p.SliceOffNs, time.Duration(minSliceOnNs), MinHostStealGap)
	}
	if p.ReadNs == 0 || p.WriteNs == 0 || p.CopyPerKBNs == 0 || p.CRC32CPerKBNs == 0 {
		return Profile{}, fmt.Errorf("profile: read_ns, write_ns, copy_per_kb_ns and crc32c_per_kb_ns must be measured (non-zero)")
	}
	if p.SyscallHoldP10Ns > p.SyscallHoldP50Ns || p.SyscallHoldP50Ns > p.SyscallHoldP90Ns {
		return Profile{}, fmt.Errorf("profile: syscall hold percentiles out of order (%v, %v, %v)", p.SyscallHoldP10Ns, p.SyscallHoldP50Ns, p.SyscallHoldP90Ns)
	}
	if p.PollerWakeP10Ns > p.PollerWakeP50Ns || p.PollerWakeP50Ns > p.PollerWakeP90Ns {
		return Profile{}, fmt.Errorf("profile: poller wake-up percentiles out of order (%v, %v, %v)", p.PollerWakeP10Ns, p.PollerWakeP50Ns, p.PollerWakeP90Ns)
	}
	if p.WakeupP10Ns > p.WakeupP50Ns || p.WakeupP50Ns > p.WakeupP90Ns {
		return Profile{}, fmt.Errorf("profile: wake-up percentiles out of order (%v, %v, %v)", p.WakeupP10Ns, p.WakeupP50Ns, p.WakeupP90Ns)
	}
	return p, nil
}

// minSliceOnNs is the shortest slice a profile may give a busy thread:
// WithHostSteal's shortest, a 50 µs gap at a share of 0.9, is 5.6 µs.
const minSliceOnNs = 5000

func ns(v float64) time.Duration { return time.Duration(math.Round(v)) }

// CPU is the profile as the CPU model's costs. What the profile does not
// measure (softirq; thread start and spawn in a profile that predates
// them; rpc and namespace costs in a profile
// that predates them) keeps the default.
func (p Profile) CPU() CPUConfig {
	c := DefaultCPUConfig()
	c.Syscall = ns((p.ReadNs + p.WriteNs) / 2)
	c.Callback = ns(p.EpollWaitNs)
	if p.LoopCallbackNs > 0 {
		c.Callback = ns(p.LoopCallbackNs)
	}
	c.CopyPerKB = ns(p.CopyPerKBNs)
	c.ChecksumPerK = ns(p.CRC32CPerKBNs)
	c.Wakeup = ns(p.WakeupP10Ns)
	c.WakeupSpread = ns(p.WakeupP90Ns - p.WakeupP10Ns)
	c.WakeupCPU = ns(p.WakeupCPUNs)
	c.SyscallHold = ns(p.SyscallHoldP10Ns)
	c.SyscallHoldSpread = ns(p.SyscallHoldP90Ns - p.SyscallHoldP10Ns)
	if p.PollerWakeP90Ns > 0 || p.PollerMissedNs > 0 {
		// The loops park in Go's poller: no processor is held.
		c.SyscallHold, c.SyscallHoldSpread = 0, 0
		c.Poller = true
		c.PollerWake = ns(p.PollerWakeP10Ns)
		c.PollerWakeSpread = ns(p.PollerWakeP90Ns - p.PollerWakeP10Ns)
		c.PollerMissed = ns(p.PollerMissedNs)
		c.StackBalance = ns(p.StackWaitNs)
	}
	if p.TCPWakeWriteNs > 0 {
		// The write that woke the reader, less its syscall and segment.
		c.TCPWake = ns(max(p.TCPWakeWriteNs-float64(c.Syscall)-float64(c.Softirq), 0))
		if p.TCPHopCPUNs > 0 {
			// But no more than the hop leaves it beyond the wake-up's
			// CPU and the other side's calls: the write's wake-up (the
			// reader's try_to_wake_up, in the writer's softirq) is the
			// waker's share of wake_cpu_ns, which counts both sides,
			// and on a machine where the two probes' figures overlap
			// (this one: a 5.8 µs write and a 6.2 µs wake-up in a
			// 10 µs hop) the hop is what was measured whole.
			c.TCPWake = min(c.TCPWake, ns(max(p.TCPHopCPUNs-p.WakeupCPUNs-2*float64(c.Syscall)-p.EpollWaitNs-float64(c.Softirq), 0)))
		}
	}
	if p.TCPHopCPUNs > 0 {
		// The model charges the probe's hop a write with its segment
		// and wake-up, the reader's wake-up and callback, and a read:
		// the read gets what the rest leaves of the measured hop. (Not
		// the segment: the loopback stream, below, leaves no room for
		// that much per segment on the sender, but does on the reader,
		// once per 64 KiB read.)
		// (The probe's reader is no real-world loop: its dispatch is
		// an epoll_wait.)
		c.TCPRead = ns(max(p.TCPHopCPUNs-p.WakeupCPUNs-2*float64(c.Syscall)-p.EpollWaitNs-float64(c.Softirq)-float64(c.TCPWake), 0))
	}
	// Each end of the stream less what the model charges it already: its
	// copy and one syscall per 64 KiB, and for the sender the softirq of
	// the two segments a 64 KiB write makes (the MSS is under 64 KiB).
	if p.LoopbackSendPerKBNs > 0 {
		c.TCPSendPerKB = ns(max(p.LoopbackSendPerKBNs-p.CopyPerKBNs-float64(c.Syscall)/64-2*float64(c.Softirq)/64, 0))
	}
	if p.LoopbackRecvPerKBNs > 0 {
		c.TCPRecvPerKB = ns(max(p.LoopbackRecvPerKBNs-p.CopyPerKBNs-float64(c.Syscall+c.TCPRead)/64, 0))
	}
	// sendfile's whole cost per KiB (it copies nothing), less its one
	// syscall per 64 KiB and the softirq of its two segments, as for a
	// write.
	// Unmeasured, it is a write's stack cost without the copy.
	c.SendfilePerKB = c.TCPSendPerKB
	if p.LoopbackSendfilePerKBNs > 0 {
		c.SendfilePerKB = ns(max(p.LoopbackSendfilePerKBNs-float64(c.Syscall)/64-2*float64(c.Softirq)/64, 0))
	}
	c.ComparePerKB = ns(p.ComparePerKBNs)
	c.AllocPerKB = ns(p.AllocPerKBNs)
	c.PageFault = ns(p.PageFaultNs)
	if p.LoopStartNs > 0 {
		c.ThreadStart = ns(p.LoopStartNs)
	}
	if p.SpawnNs > 0 {
		// A spawn starts the process's main loop, charged as any loop's.
		c.Spawn = ns(max(p.SpawnNs-float64(c.ThreadStart), 0))
	}
	if p.LoopbackSendfileRecvPerKBNs > 0 && p.LoopbackRecvPerKBNs > 0 {
		// What reading sendfile's bytes costs beyond reading written
		// ones (same stream, same reader).
		c.TCPRecvSplicedPerKB = ns(max(p.LoopbackSendfileRecvPerKBNs-p.LoopbackRecvPerKBNs, 0))
	}
	if p.SliceOnNs > 0 && p.SliceOffNs > 0 {
		c.SliceOn, c.SliceOff = ns(p.SliceOnNs), ns(p.SliceOffNs)
	}
	c.TCPDial, c.TCPAccept = ns(p.TCPDialNs), ns(p.TCPAcceptNs)
	c.CallbackByConns = [3]time.Duration{ns(p.Callback8ConnsNs), ns(p.Callback32ConnsNs), ns(p.Callback128ConnsNs)}
	for _, f := range []struct {
		to *time.Duration
		v  float64
	}{{&c.Frame, p.RPCFrameNs}, {&c.Parse, p.ParseNs}, {&c.Inode, p.InodeNs}, {&c.Token, p.TokenNs}} {
		if f.v > 0 {
			*f.to = ns(f.v)
		}
	}
	return c
}

// Account is what the real world's CPU accounting adds to each callback
// and work item (CPUConfig.Account): for simulating a run whose real
// counterpart accounts, as run read's does.
func (p Profile) Account() time.Duration { return ns(p.AccountCPUNs) }
