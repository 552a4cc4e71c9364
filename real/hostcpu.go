package real

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// HostCPU is the machine's CPU time so far, all cores together, as the
// kernel reports it in the cpu line of /proc/stat.
//
// It is here for Steal. A virtual machine's cores are threads of the
// host's, and when the host runs another guest's work on the physical
// core a guest core wanted, the guest's kernel counts the wait as steal.
// On a shared VM that wait is what stretches a real run's latencies by
// milliseconds at random: a loop woken for a callback is not running,
// however idle its own machine looks. A real run's figures mean the model
// only as far as the host let the machine run.
type HostCPU struct {
	// Busy is what the guest's cores ran: user, nice, system, irq and
	// softirq time (every process of the machine, not only this one).
	Busy time.Duration
	// Steal is the time a guest core wanted to run and the host ran
	// something else.
	Steal time.Duration
	// Idle is idle and iowait time.
	Idle time.Duration
}

// userHZ is the unit of /proc/stat's times: USER_HZ, 100 on every
// architecture Linux exports to user space with a fixed value.
const userHZ = 100

// minWanted is the least CPU time wanted that StealShare measures.
const minWanted = 10 * time.Second / userHZ

// maxTicks bounds each figure so that the sums of eight stay in a
// time.Duration: a machine up for 2.9 million years on one core.
const maxTicks = uint64(1<<63-1) / uint64(time.Second/userHZ) / 8

// ReadHostCPU reads /proc/stat.
func ReadHostCPU() (HostCPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return HostCPU{}, fmt.Errorf("host cpu: %w", err)
	}
	return ParseHostCPU(b)
}

// ParseHostCPU reads the aggregate "cpu" line of /proc/stat's contents:
// user nice system idle iowait irq softirq steal [guest guest_nice].
// (Guest time is part of user time already.) Steal, the eighth figure,
// is there since Linux 2.6.11; a line without it is an error.
func ParseHostCPU(stat []byte) (HostCPU, error) {
	for len(stat) > 0 {
		var line []byte
		line, stat, _ = bytes.Cut(stat, []byte{'\n'})
		if f := bytes.Fields(line); len(f) > 0 && string(f[0]) == "cpu" {
			return parseCPULine(f[1:])
		}
	}
	return HostCPU{}, errors.New("host cpu: /proc/stat has no cpu line")
}

func parseCPULine(f [][]byte) (HostCPU, error) {
	if len(f) < 8 {
		return HostCPU{}, fmt.Errorf("host cpu: /proc/stat's cpu line has %d figures, want at least 8 (steal is the eighth)", len(f))
	}
	var v [8]time.Duration
	for i := range v {
		n, err := strconv.ParseUint(string(f[i]), 10, 63)
		if err != nil {
			return HostCPU{}, fmt.Errorf("host cpu: /proc/stat's cpu line: figure %d: %w", i+1, err)
		}
		if n > maxTicks {
			return HostCPU{}, fmt.Errorf("host cpu: /proc/stat's cpu line: figure %d: %d ticks is out of range", i+1, n)
		}
		v[i] = time.Duration(n) * (time.Second / userHZ)
	}
	user, nice, system, idle, iowait, irq, softirq, steal := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
	return HostCPU{Busy: user + nice + system + irq + softirq, Steal: steal, Idle: idle + iowait}, nil
}

// Since is the CPU time from prev to h.
func (h HostCPU) Since(prev HostCPU) HostCPU {
	return HostCPU{Busy: h.Busy - prev.Busy, Steal: h.Steal - prev.Steal, Idle: h.Idle - prev.Idle}
}

// Add is h plus d: the time of two stretches together.
func (h HostCPU) Add(d HostCPU) HostCPU {
	return HostCPU{Busy: h.Busy + d.Busy, Steal: h.Steal + d.Steal, Idle: h.Idle + d.Idle}
}

// StealShare is the share of the CPU time the machine wanted that the
// host withheld: Steal / (Busy + Steal). It is false when the machine
// wanted less than a tenth of a second (ten of the kernel's ticks: the
// busy time is sampled a tick at a time, so a stretch that wanted less
// says little), or the counters went backwards, as after a restore.
//
// Steal accrues only while a guest core wants to run, so it is measured
// against that time, not the wall clock: a one-client run keeps the cores
// idle most of the time, and on a crowded host a third of each wake-up
// can still be spent waiting for the physical core.
func (h HostCPU) StealShare() (float64, bool) {
	if h.Busy < 0 || h.Steal < 0 || h.Busy+h.Steal < minWanted {
		return 0, false
	}
	return float64(h.Steal) / float64(h.Busy+h.Steal), true
}
