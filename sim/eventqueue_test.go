package sim

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// eventQueueMachine drives the world's event heap as the world does
// (schedule to arm and re-arm, remove to disarm, peek and pop to run)
// next to a reference: the armed events and their keys, whose least must
// be what the heap gives next. Times are drawn from a few values, so keys
// tie on time and the sequence number decides. A re-arm to a later key
// leaves its entry under the old key until it comes to the top (peek
// settles it); one to an earlier key sifts it up at once.
type eventQueueMachine struct {
	w     *World
	armed []*event
}

func (m *eventQueueMachine) pick(t *rapid.T) (int, *event) {
	if len(m.armed) == 0 {
		t.Skip("nothing armed")
	}
	i := rapid.IntRange(0, len(m.armed)-1).Draw(t, "i")
	return i, m.armed[i]
}

func (m *eventQueueMachine) at(t *rapid.T) time.Duration {
	return m.w.now + time.Duration(rapid.IntRange(0, 40).Draw(t, "at"))
}

func (m *eventQueueMachine) Arm(t *rapid.T) {
	ev := &event{w: m.w, index: -1}
	m.w.schedule(ev, m.at(t), nil)
	m.armed = append(m.armed, ev)
}

// ArmMany arms a run of events at once, so that the heap grows deep
// enough (past two levels) for sifts to pass between subtrees.
func (m *eventQueueMachine) ArmMany(t *rapid.T) {
	for range rapid.IntRange(2, 30).Draw(t, "n") {
		m.Arm(t)
	}
}

func (m *eventQueueMachine) Rearm(t *rapid.T) {
	_, ev := m.pick(t)
	m.w.schedule(ev, m.at(t), nil)
}

func (m *eventQueueMachine) Remove(t *rapid.T) {
	i, ev := m.pick(t)
	m.w.queue.remove(ev.index)
	m.armed = append(m.armed[:i], m.armed[i+1:]...)
	if ev.index != -1 {
		t.Fatalf("a removed event keeps index %d", ev.index)
	}
}

func (m *eventQueueMachine) Pop(t *rapid.T) {
	if len(m.armed) == 0 {
		t.Skip("nothing armed")
	}
	first := 0
	for i, ev := range m.armed {
		if ev.at < m.armed[first].at || ev.at == m.armed[first].at && ev.seq < m.armed[first].seq {
			first = i
		}
	}
	want := m.armed[first]
	if got := m.w.queue.peek(); got != want {
		t.Fatalf("peek gave the event at %v #%d, want the one at %v #%d", got.at, got.seq, want.at, want.seq)
	}
	if got := m.w.queue.pop(); got != want || got.index != -1 {
		t.Fatalf("pop gave the event at %v #%d (index %d), want the one peek gave", got.at, got.seq, got.index)
	}
	m.armed = append(m.armed[:first], m.armed[first+1:]...)
	m.w.now = want.at
}

func (m *eventQueueMachine) Check(t *rapid.T) {
	q := m.w.queue
	if len(q) != len(m.armed) {
		t.Fatalf("the heap holds %d entries, %d events are armed", len(q), len(m.armed))
	}
	for i := range q {
		if q[i].ev.index != i {
			t.Fatalf("entry %d's event says index %d", i, q[i].ev.index)
		}
		if i > 0 && q[i].before(&q[(i-1)/4]) {
			t.Fatalf("entry %d (%v #%d) is before its parent (%v #%d)", i, q[i].at, q[i].seq, q[(i-1)/4].at, q[(i-1)/4].seq)
		}
		if e := q[i].ev; q[i].at > e.at || q[i].at == e.at && q[i].seq > e.seq {
			t.Fatalf("entry %d is queued by a later key than its event's", i)
		}
	}
}

func TestEventQueueMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &eventQueueMachine{w: New(DefaultConfig(1))}
		t.Repeat(rapid.StateMachineActions(m))
	})
}
