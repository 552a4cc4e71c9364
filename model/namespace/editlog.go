package namespace

import (
	"encoding/binary"
	"fmt"

	"xceiver/model"
)

// editLog makes namespace changes durable as Hadoop's FSEditLog does: a
// change is logged into a buffer under the namespace lock, and the handler
// that made it answers only once the log is synced, outside the lock. Syncs
// are group commits: while one is in flight the edits logged meanwhile wait
// in the buffer and go out together in the next. Its state belongs to its
// own loop; the write and fsync run on a worker, so the loop is never
// blocked in the disk. (Hadoop 0.20's handler that found no sync running did
// the sync itself while the others waited for it; the waits are the same.)
//
// A failed write or fsync is fatal, as in HDFS (FSEditLog exits the
// namenode when no edits directory is left): the edits it carried are
// never answered, nothing more is synced, and fatal is told. The changes
// were visible in memory meanwhile — HDFS's readers see an edit as soon as
// its writer releases the lock, before logSync — so a namenode that dies
// loses the ones its log does not hold, and a restart replays the log.
type editLog struct {
	p     model.Process
	loop  model.Loop
	pool  model.WorkerPool
	f     model.File
	off   int64
	fatal func(error)
	bugs  Bugs

	buf     []byte // edits logged since the sync in flight began
	waiting []func(error)
	syncing bool
	failed  bool
	// Syncs and Edits count group commits and the edits they carried, and
	// Failed the syncs that failed (on loop).
	Syncs, Edits, Failed int
}

// openEditLog opens (creating) the log at path on p's disk; replay reads
// what an earlier run of the namenode left in it.
func openEditLog(p model.Process, path string, fatal func(error), bugs Bugs) (*editLog, error) {
	f, err := p.Disk().Open(path, model.ReadWrite|model.Create, model.FDFile)
	if err != nil {
		return nil, fmt.Errorf("edit log %s: %w", path, err)
	}
	loop, err := p.NewLoop("editlog")
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("edit log: %w", err)
	}
	return &editLog{p: p, loop: loop, pool: p.NewWorkerPool("editlog-sync", 1), f: f, fatal: fatal, bugs: bugs}, nil
}

// replay calls apply with every whole record of the log in transaction
// order, from txid 1, and returns the last txid. The log ends at the first
// record that is cut short, does not decode or does not follow its
// predecessor (a write torn by a crash, or bytes of an older, longer
// tail). What follows the last whole record is zeroed, not only written
// over by the next edits: those may be shorter, and what they left of a
// torn record could decode, at the next replay, as an edit no one made (a
// path may hold an encoded record). What it replayed is written again
// and synced before the namenode serves: a crash can leave edits written
// but never synced, and once served they must not be lost (Hadoop 0.20's
// namenode saved a new, synced image of what it loaded before serving).
func (el *editLog) replay(apply func(Request)) (uint64, error) {
	size, err := el.f.Size()
	if err != nil {
		return 0, fmt.Errorf("edit log: %w", err)
	}
	b := make([]byte, size)
	if size > 0 {
		if _, err := el.f.ReadAt(b, 0); err != nil {
			return 0, fmt.Errorf("edit log: read: %w", err)
		}
	}
	var txid uint64
	off := 0
	for {
		r, id, n, ok := decodeEditRecord(b[off:])
		if !ok || id != txid+1 {
			break
		}
		apply(r)
		txid, off = id, off+n
	}
	el.off = int64(off)
	if size > 0 {
		// Written again before the fsync: an fsync alone would not do,
		// for a sync that failed before the crash left its pages clean
		// though never written (Linux since 4.13), and a later fsync
		// skips them; rewriting dirties them.
		clear(b[off:])
		rewrite, at := b, 0
		if el.bugs.ReplaySyncOnly {
			// (The bug skips rewriting what was replayed, not the
			// zeroing of the torn tail, a fix of its own.)
			rewrite, at = b[off:], off
		}
		if len(rewrite) > 0 {
			if _, err := el.f.WriteAt(rewrite, int64(at)); err != nil {
				return 0, fmt.Errorf("edit log: rewrite after replay: %w", err)
			}
		}
		if err := el.f.Sync(); err != nil {
			return 0, fmt.Errorf("edit log: sync after replay: %w", err)
		}
	}
	return txid, nil
}

// log hands the edit rec to the log and calls synced, on loop, once it is
// durable. Call it under the namespace lock held exclusively: the posts,
// and so the edits, are in the order the lock ordered the changes.
func (el *editLog) log(loop model.Loop, rec []byte, synced func(error)) {
	el.loop.Post(func() {
		if el.failed {
			return // the namenode is going down: never answered
		}
		el.buf = append(el.buf, rec...)
		el.waiting = append(el.waiting, func(err error) { loop.Post(func() { synced(err) }) })
		el.Edits++
		if !el.syncing {
			el.sync()
		}
	})
}

// sync writes and fsyncs what the buffer holds, then answers its waiters
// and starts the next group if edits came in meanwhile.
func (el *editLog) sync() {
	batch, waiting, off := el.buf, el.waiting, el.off
	el.buf, el.waiting = nil, nil
	el.syncing = true
	el.off += int64(len(batch))
	el.Syncs++
	f := el.f
	var err error
	el.pool.Submit(el.loop, func() {
		if _, err = f.WriteAt(batch, off); err == nil {
			err = f.Sync()
		}
	}, func() {
		el.syncing = false
		if err != nil && el.bugs.AnswerEIO {
			el.Failed++
			for _, w := range waiting {
				w(err)
			}
			if len(el.buf) > 0 {
				el.sync()
			}
			return
		}
		if err != nil {
			el.Failed++
			el.failed = true
			el.buf, el.waiting = nil, nil
			el.p.Log("editlog-sync-failed", "err", err.Error())
			el.fatal(fmt.Errorf("edit log: sync failed, the namenode cannot go on: %w", err))
			return
		}
		for _, w := range waiting {
			w(nil)
		}
		if el.bugs.LoseGroupWaiters {
			el.waiting = nil // the bug: edits logged meanwhile go out, their handlers wait forever
		}
		if len(el.buf) > 0 {
			el.sync()
		}
	})
}

// close releases the log's file, loop and worker.
func (el *editLog) close() {
	el.pool.Close()
	el.loop.Close()
	el.f.Close()
}

// editRecord encodes a change as an edit: its transaction id, method and
// request, length-prefixed (as FSEditLog writes an opcode, a txid and the
// op's fields).
func editRecord(txid uint64, r Request) []byte {
	body := EncodeRequest(r)
	b := make([]byte, 0, 4+8+1+len(body))
	b = binary.BigEndian.AppendUint32(b, uint32(8+1+len(body)))
	b = binary.BigEndian.AppendUint64(b, txid)
	b = append(b, r.Method)
	return append(b, body...)
}

// decodeEditRecord decodes the record b starts with and its size; ok is
// false for one cut short or malformed.
func decodeEditRecord(b []byte) (r Request, txid uint64, n int, ok bool) {
	if len(b) < 4 {
		return r, 0, 0, false
	}
	size := binary.BigEndian.Uint32(b)
	if size < 9 || uint64(size) > uint64(len(b)-4) {
		return r, 0, 0, false
	}
	txid = binary.BigEndian.Uint64(b[4:])
	m := b[12]
	if !changes(m) {
		return r, 0, 0, false
	}
	r, ok = DecodeRequest(m, b[13:4+size])
	return r, txid, 4 + int(size), ok
}
