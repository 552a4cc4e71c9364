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
type editLog struct {
	p    model.Process
	loop model.Loop
	pool model.WorkerPool
	f    model.File
	off  int64

	buf     []byte // edits logged since the sync in flight began
	waiting []func(error)
	syncing bool
	// Syncs and Edits count group commits and the edits they carried, and
	// Failed the syncs that failed (on loop).
	Syncs, Edits, Failed int
}

// openEditLog opens (truncating) the log at path on p's disk.
func openEditLog(p model.Process, path string) (*editLog, error) {
	f, err := p.Disk().Open(path, model.ReadWrite|model.Create|model.Truncate, model.FDFile)
	if err != nil {
		return nil, fmt.Errorf("edit log %s: %w", path, err)
	}
	loop, err := p.NewLoop("editlog")
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("edit log: %w", err)
	}
	return &editLog{p: p, loop: loop, pool: p.NewWorkerPool("editlog-sync", 1), f: f}, nil
}

// log hands the edit rec to the log and calls synced, on loop, once it is
// durable (or the sync failed). Call it under the namespace lock held
// exclusively: the posts, and so the edits, are in the order the lock
// ordered the changes.
func (el *editLog) log(loop model.Loop, rec []byte, synced func(error)) {
	el.loop.Post(func() {
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
		if err != nil {
			el.Failed++
			el.p.Log("editlog-sync-failed", "err", err.Error())
			err = fmt.Errorf("edit log: %w", err)
		}
		for _, w := range waiting {
			w(err)
		}
		if len(el.waiting) > 0 {
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
