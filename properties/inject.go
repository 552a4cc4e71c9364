package properties

import (
	"time"

	"xceiver/sim"
)

// scheduleFaults arms every fault of the schedule, relative to the moment
// the datanode first served.
func (h *harness) scheduleFaults() {
	for _, f := range h.c.Schedule.Faults {
		at := h.start + f.At
		h.faultsEnd = max(h.faultsEnd, at+f.Dur)
		h.w.At(at, func() { h.inject(f) })
	}
}

// inject starts fault f and arranges its end. It runs as a kernel event.
func (h *harness) inject(f Fault) {
	if h.failure != nil {
		return
	}
	h.stats.Faults++
	w, dn := h.w, h.dnProc
	end := h.w.Now() + f.Dur
	switch f.Kind {
	case FaultReset:
		if ids := dn.TCPConns(); len(ids) > 0 {
			w.ResetConn(ids[f.Arg%len(ids)])
		}
	case FaultVanish:
		ids := dn.TCPConns()
		if f.Arg%2 == 0 {
			if idle := dn.IdleTCPConns(); len(idle) > 0 {
				ids = idle
			}
		}
		if len(ids) > 0 && w.VanishConn(ids[(f.Arg/2)%len(ids)]) {
			h.vanished = true
		}
	case FaultSpike:
		p := dn
		if f.Arg > 0 && f.Arg <= len(h.clients) && h.clients[f.Arg-1].p != nil {
			p = h.clients[f.Arg-1].p
		}
		p.Spike(f.Dur)
	case FaultSlowReader:
		if f.Arg >= len(h.clients) || h.clients[f.Arg].p == nil {
			return
		}
		p := h.clients[f.Arg].p
		h.slowActive[f.Arg]++
		p.SlowReader(f.Size)
		w.At(end, func() {
			h.slowActive[f.Arg]--
			if h.slowActive[f.Arg] == 0 {
				p.SlowReader(0)
			}
		})
	case FaultEIO, FaultSlowDisk:
		var df sim.DiskFaults
		if f.Kind == FaultEIO {
			df.ReadEIO, df.WriteEIO = float64(f.Arg)/1000, float64(f.Arg)/2000
		} else {
			df.SlowIO, df.SlowDelay = float64(f.Arg)/1000, time.Duration(f.Size)*time.Millisecond
		}
		w.At(end, h.dnProc.AddDiskFaults(df))
	case FaultMutate:
		h.mutate(f)
	case FaultCrash:
		if dn.Crashed() {
			return
		}
		h.stats.Crashes++
		h.dn = nil
		dn.Crash()
		w.At(end, func() {
			if dn.Crashed() {
				dn.Restart()
			}
		})
	case FaultBitRot:
		h.rot(f)
	case FaultFlip:
		// The datanode's read packets and the clients' write packets.
		procs := []*sim.Process{dn}
		for _, ch := range h.clients {
			if ch.p != nil {
				procs = append(procs, ch.p)
			}
		}
		for _, p := range procs {
			p.SetBufferFaults(f.Arg, h.cfg.Poison)
		}
		w.At(end, func() {
			for _, p := range procs {
				p.SetBufferFaults(0, h.cfg.Poison)
			}
		})
	case FaultCrashPoint:
		h.crashPoint(f)
	case FaultFDPressure:
		if dn.Crashed() {
			return
		}
		release, _ := dn.FDPressure(f.Arg)
		w.At(end, release)
	}
}

// mutate changes a block under its readers: the admin replaces it, bumps
// its stamp (an empty append) or deletes it — the block some client is
// reading now if there is one.
func (h *harness) mutate(f Fault) {
	a := h.admin
	if a == nil || a.cl == nil {
		return
	}
	block := f.Key%h.cfg.MaxBlock + 1
	for _, ch := range h.clients {
		for _, b := range ch.reading {
			if b != 0 {
				block = b
				goto found
			}
		}
	}
found:
	op := Op{Client: a.id, Block: block}
	switch f.Arg {
	case 0:
		op.Kind, op.Size, op.Key = OpReplace, f.Size, f.Key
	case 1:
		op.Kind = OpAppend
	default:
		op.Kind = OpDelete
	}
	a.loop.Post(func() {
		if h.failure == nil {
			h.issue(a, 0, op, false, nil)
		}
	})
}
