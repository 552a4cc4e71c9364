package traces

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"xceiver/properties"
)

// event is the part of a trace event the renderer reads.
type event struct {
	T    int64 // ns
	Proc string
	Kind string
	Conn uint64
	Fd   uint64
	Open int64 // fd: +1 / -1
	Tot  int64 // fd: open fds after
	Len  int64 // seg: payload bytes
	Seq  int64 // seg
	Ack  int64 // seg
	Win  int64 // seg
	Str  string
}

func parseEvents(lines [][]byte) []event {
	evs := make([]event, 0, len(lines))
	for _, l := range lines {
		var m map[string]any
		if json.Unmarshal(l, &m) != nil {
			continue
		}
		num := func(k string) float64 { f, _ := m[k].(float64); return f }
		str := func(k string) string { s, _ := m[k].(string); return s }
		e := event{T: int64(math.Round(num("t_us") * 1000)), Proc: str("proc"), Kind: str("kind")}
		switch e.Kind {
		case "fd":
			e.Fd, e.Open, e.Tot, e.Str = uint64(num("fd")), int64(num("open")), int64(num("total")), str("fd_kind")
		case "seg":
			e.Conn, e.Len, e.Str = uint64(num("conn")), int64(num("len")), str("flags")
			e.Seq, e.Ack, e.Win = int64(num("seq")), int64(num("ack")), int64(num("win"))
		case "delack":
			e.Conn = uint64(num("conn"))
		case "connect", "accept":
			e.Conn, e.Str = uint64(num("conn")), str("addr")
		case "close":
			e.Conn, e.Str = uint64(num("conn")), str("how")
		case "fault":
			e.Conn, e.Str = uint64(num("conn")), str("what")
		case "phase", "fail":
			e.Str = str("what") + str("error")
		case "log":
			e.Str = str("msg")
		case "listen":
			e.Str = str("addr")
		case "synDrop":
			e.Conn, e.Str = uint64(num("conn")), str("addr")
		case "disk", "diskErr":
			e.Len, e.Str = int64(num("len")), str("op")+str("err")
		}
		evs = append(evs, e)
	}
	return evs
}

// WriteHTML renders a replay of t for a person who has a minute: the
// failure and its property first; then a sequence diagram of the run
// (segments with sizes, flags and ACKs, delayed-ACK timers, fds, faults)
// with real times; then porcupine's view of the history of the block the
// failure is about. The page is 1400 pixels wide at most and never
// scrolls sideways.
func WriteHTML(w io.Writer, t *Trace, r *properties.Result) error {
	evs := parseEvents(t.Events)
	var b strings.Builder
	h := &t.Header
	b.WriteString(pageHead(h.Property))
	// 1. The failure.
	fmt.Fprintf(&b, `<header id="failure"><h1>FAIL: <span class="prop">%s</span></h1><p class="msg">%s</p>`, esc(h.Property), esc(h.Message))
	verdict := "reproduced"
	if r == nil || r.Failure == nil || r.Failure.Property != h.Property {
		verdict = "not reproduced by this replay"
	}
	end := int64(0)
	for _, e := range evs {
		end = max(end, e.T)
	}
	fmt.Fprintf(&b, `<p class="meta">%s · seed %d%s · %d events over %s of virtual time · trace hash %s · code %s · replay: %s</p>`,
		esc(propertyMeaning(h.Property)), h.Seed, bugNote(h.Bug), h.Events, fmtDur(end), esc(h.TraceHash), esc(h.CodeVersion), verdict)
	again := fmt.Sprintf("xceiver check --seed %d", h.Seed)
	if h.Bug != "" {
		again += " --bug " + h.Bug
	}
	fmt.Fprintf(&b, `<p class="meta">The case: %s, %d client%s, %d fault%s in the schedule. Record it again: <code>%s</code></p></header>`,
		esc(h.Config.Mode), h.Config.Clients, plural(h.Config.Clients), len(h.Schedule.Faults), plural(len(h.Schedule.Faults)), esc(again))

	// 2. The sequence diagram.
	b.WriteString(`<h2>What happened</h2>`)
	// The ops on the block the failure names are marked in the diagram.
	focus := ""
	if m := blockInMessage.FindStringSubmatch(h.Message); m != nil {
		focus = "b=" + m[1]
		fmt.Fprintf(&b, `<p class="note">Ops on block %s are in red.</p>`, m[1])
	}
	writeSequence(&b, evs, focus)

	// 3. Porcupine's view of the block the failure is about.
	writeBlockHistory(&b, h, r)

	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// pageHead opens a page about a failure of property.
func pageHead(property string) string {
	return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>xceiver trace: ` + esc(property) + `</title><style>
body{font:13px/1.4 sans-serif;margin:0 auto;padding:8px 12px;max-width:1376px;color:#222}
h1{font-size:22px;margin:4px 0}h1 .prop{color:#b52a1d}h2{font-size:16px;margin:18px 0 6px}
.msg{font-size:15px;margin:4px 0 8px}.meta{color:#555}.meta code{background:#f3f3f3;padding:1px 4px}
.note{color:#555;max-width:1100px}svg text{font-family:sans-serif}
iframe{width:100%;height:560px;border:1px solid #ccc}
table.rows{border-collapse:collapse;margin:4px 0}table.rows td{padding:1px 10px 1px 0}
pre.case{background:#f6f6f6;padding:6px 8px;max-height:320px;overflow:auto}
</style></head><body>
`
}

// WriteHTMLFile writes the rendering to path.
func WriteHTMLFile(path string, t *Trace, r *properties.Result) error {
	var b bytes.Buffer
	if err := WriteHTML(&b, t, r); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func propertyMeaning(p string) string {
	switch p {
	case properties.PropFDBounds:
		return "fd-bounds: a process held more fds than its limit or its design allows"
	case properties.PropPoolBound:
		return "pool-bound: the handle pool held more block files than its bound"
	case properties.PropNoCloseInUse:
		return "no-close-in-use: a block file was closed while a read still used it"
	case properties.PropLinearizable:
		return "linearizability: the clients' history fits no order of the block-store model"
	case properties.PropStream:
		return "stream-integrity: a client saw a malformed stream"
	case properties.PropAvailability:
		return "availability: an op failed though no fault was in force"
	case properties.PropLiveness:
		return "liveness: the run did not reach quiescence"
	case properties.PropLeakFree:
		return "leak-freedom: at quiescence a process was not back to its baseline"
	case properties.PropHarness:
		return "harness: the world failed (an assertion or a panic in model code)"
	case properties.PropExactlyOnce:
		return "exactly-once: an rpc call got no end, or more than one"
	case properties.PropQueueBound:
		return "queue-bound: the rpc call queue held more calls than its bound"
	case properties.PropMemory:
		return "bounded-memory: buffers grew past their bound"
	case properties.PropDurable:
		return "durability: a restarted namenode lost a change it had answered, or the data behind a file it kept"
	}
	return p
}

// Sequence diagram geometry.
const (
	seqWidth  = 1360.0
	seqTimeW  = 112.0
	seqRowH   = 17.0
	seqHeadH  = 34.0
	seqBreakH = 22.0
	// seqGap is the quiet time after which the diagram breaks the time
	// axis and says how long nothing happened.
	seqGap = 2 * time.Millisecond
	// seqMaxRows bounds the diagram; beyond it the middle is left out.
	seqMaxRows = 900
)

// seqRow is one line of the diagram: an event, or a break in time.
type seqRow struct {
	e       event
	gap     int64 // a break: this much time passed
	omitted int   // a break: this many events left out
}

// writeSequence draws the run as a sequence diagram: a lifeline per
// process, one row per event (a logged op whose fields include focus,
// such as "b=4", in red), time going down with each row's time on the
// left and quiet stretches collapsed into labelled breaks.
func writeSequence(b *strings.Builder, evs []event, focus string) {
	// Who is at the other end of each connection (by the connecting and
	// accepting ends' addresses).
	peer := map[string]string{}
	key := func(proc string, conn uint64) string { return proc + "#" + strconv.FormatUint(conn, 10) }
	for _, e := range evs {
		if e.Kind == "connect" || e.Kind == "accept" {
			host, _, _ := strings.Cut(e.Str, ":")
			peer[key(e.Proc, e.Conn)] = host
		}
	}
	// The processes involved: those that connected, sent, logged an op
	// or were hit by a fault. The others only started.
	involved := map[string]bool{}
	var all []string
	for _, e := range evs {
		if e.Proc != "" && !slices.Contains(all, e.Proc) {
			all = append(all, e.Proc)
		}
		switch e.Kind {
		case "seg", "connect", "accept", "close", "log", "fault", "crash", "delack", "fail", "diskErr":
			involved[e.Proc] = true
		}
	}
	var idle []string
	for _, p := range all {
		if !involved[p] {
			idle = append(idle, p)
		}
	}
	var shown []event
	disk := 0
	for _, e := range evs {
		switch {
		case e.Kind == "disk":
			disk++ // many and rarely the story; counted below
		case e.Kind == "", e.Proc != "" && !involved[e.Proc]:
		default:
			shown = append(shown, e)
		}
	}
	var procs []string
	for _, e := range shown {
		if e.Proc != "" && !slices.Contains(procs, e.Proc) {
			procs = append(procs, e.Proc)
		}
	}
	// A few events carry a time ahead of the one they were recorded at
	// (a process spawned for later): draw them where they happen.
	slices.SortStableFunc(shown, func(a, b event) int { return cmpInt(a.T, b.T) })
	// Runs of fd events of one process (setup, a read opening its block
	// and meta files) become one row.
	var merged []event
	for _, e := range shown {
		if n := len(merged); n > 0 && e.Kind == "fd" && merged[n-1].Kind == "fds" && merged[n-1].Proc == e.Proc &&
			time.Duration(e.T-merged[n-1].T) < seqGap {
			m := &merged[n-1]
			m.Str += ", " + fdChange(e)
			m.Tot = e.Tot
			continue
		}
		if e.Kind == "fd" {
			e.Kind, e.Str = "fds", fdChange(e)
		}
		merged = append(merged, e)
	}
	shown = merged
	var rows []seqRow
	omitted := 0
	if len(shown) > seqMaxRows {
		// The start (setup) and the end (the failure) matter most.
		head, tail := seqMaxRows/4, seqMaxRows-seqMaxRows/4
		omitted = len(shown) - head - tail
		shown = append(shown[:head:head], shown[len(shown)-tail:]...)
	}
	for i, e := range shown {
		if i > 0 {
			gap := e.T - shown[i-1].T
			switch {
			case omitted > 0 && i == seqMaxRows/4:
				rows = append(rows, seqRow{gap: gap, omitted: omitted})
			case time.Duration(gap) >= seqGap:
				rows = append(rows, seqRow{gap: gap})
			}
		}
		rows = append(rows, seqRow{e: e})
	}
	height := seqHeadH + 8
	for _, r := range rows {
		if r.gap > 0 || r.omitted > 0 {
			height += seqBreakH
		} else {
			height += seqRowH
		}
	}
	n := max(len(procs), 1)
	colW := (seqWidth - seqTimeW) / float64(n)
	colX := func(p string) float64 {
		i := slices.Index(procs, p)
		if i < 0 {
			return seqTimeW + colW/2
		}
		return seqTimeW + colW*(float64(i)+0.5)
	}
	maxChars := int(colW/6.2) - 2
	fmt.Fprintf(b, `<svg class="sequence" xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-size="11">`,
		seqWidth, height, seqWidth, height)
	b.WriteString(`<defs><marker id="arr" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="context-stroke"/></marker></defs>`)
	fmt.Fprintf(b, `<text x="4" y="20" font-weight="bold">time</text>`)
	for _, p := range procs {
		fmt.Fprintf(b, `<text class="lifeline-name" x="%.1f" y="20" text-anchor="middle" font-weight="bold" font-size="13">%s</text>`, colX(p), esc(p))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#bbb"/>`, colX(p), seqHeadH-6, colX(p), height)
	}
	y := seqHeadH
	for _, r := range rows {
		if r.gap > 0 || r.omitted > 0 {
			label := "⋯ " + fmtDur(r.gap) + " later ⋯"
			if r.omitted > 0 {
				label = fmt.Sprintf("⋯ %d events left out, %s ⋯", r.omitted, fmtDur(r.gap))
			}
			fmt.Fprintf(b, `<rect class="break" x="0" y="%.1f" width="%.0f" height="%.0f" fill="#f4f4f4"/><text x="%.0f" y="%.1f" text-anchor="middle" fill="#666">%s</text>`,
				y+2, seqWidth, seqBreakH-4, seqWidth/2, y+seqBreakH/2+4, esc(label))
			y += seqBreakH
			continue
		}
		e := r.e
		mid := y + seqRowH/2
		fmt.Fprintf(b, `<text x="4" y="%.1f" fill="#555" font-family="monospace">%s</text>`, mid+4, fmtTime(e.T))
		x := colX(e.Proc)
		note := func(class, color, text, full string) {
			// A note beside the lifeline, to the right (to the left for
			// the last lifeline), cut to the column with the whole text
			// as its tooltip.
			anchor, tx := "start", x+6
			if slices.Index(procs, e.Proc) == len(procs)-1 && len(procs) > 1 {
				anchor, tx = "end", x-6
			}
			fmt.Fprintf(b, `<g class="%s"><circle cx="%.1f" cy="%.1f" r="3" fill="%s"/><text x="%.1f" y="%.1f" text-anchor="%s" fill="%s">%s<title>%s</title></text></g>`,
				class, x, mid, color, tx, mid+4, anchor, color, esc(cut(text, maxChars)), esc(full))
		}
		band := func(class, color, text string) {
			fmt.Fprintf(b, `<g class="%s"><rect x="%.0f" y="%.1f" width="%.0f" height="%.0f" fill="%s" opacity="0.18"/><text x="%.0f" y="%.1f" fill="%s" font-weight="bold">%s</text></g>`,
				class, seqTimeW, y+1, seqWidth-seqTimeW, seqRowH-2, color, seqTimeW+6, mid+4, color, esc(cut(text, 180)))
		}
		switch e.Kind {
		case "seg":
			to, ok := peer[key(e.Proc, e.Conn)]
			label, color := segLabel(e)
			full := fmt.Sprintf("%s → %s conn %d: %s seq %d ack %d win %d", e.Proc, to, e.Conn, label, e.Seq, e.Ack, e.Win)
			if !ok || !slices.Contains(procs, to) {
				note("seg", color, label+" (conn "+strconv.FormatUint(e.Conn, 10)+")", full)
				break
			}
			x2 := colX(to)
			fmt.Fprintf(b, `<g class="seg" data-len="%d" data-flags="%s"><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.3" marker-end="url(#arr)"/><text x="%.1f" y="%.1f" text-anchor="middle" fill="%s">%s<title>%s</title></text></g>`,
				e.Len, esc(e.Str), x, mid+2, x2, mid+2, color, (x+x2)/2, mid-1, color, esc(cut(label, int(math.Abs(x2-x)/6.2))), esc(full))
		case "delack":
			note("delack", "#8e44ad", fmt.Sprintf("delayed-ACK timer fires (conn %d)", e.Conn), "")
		case "fds":
			text := fmt.Sprintf("fds %s → %d open", e.Str, e.Tot)
			note("fd", "#7f8c8d", text, text)
		case "connect":
			note("conn", "#1e7b34", fmt.Sprintf("connect → %s (conn %d)", e.Str, e.Conn), "")
		case "accept":
			note("conn", "#1e7b34", fmt.Sprintf("accept ← %s (conn %d)", e.Str, e.Conn), "")
		case "close":
			note("conn", "#1e7b34", fmt.Sprintf("close conn %d (%s)", e.Conn, e.Str), "")
		case "fault":
			band("fault", "#c0392b", fmt.Sprintf("FAULT %s on %s", e.Str, e.Proc))
		case "crash":
			band("fault", "#c0392b", "CRASH of "+e.Proc)
		case "phase":
			band("phase", "#2c5aa0", "phase: "+e.Str)
		case "fail":
			band("fail", "#b52a1d", "FAILED: "+e.Str)
		case "log":
			if focus != "" && slices.Contains(strings.Fields(e.Str), focus) {
				note("log focus", "#b52a1d", e.Str, "")
				break
			}
			note("log", "#333", e.Str, "")
		case "diskErr":
			note("disk", "#c0392b", "disk error: "+e.Str, "")
		default:
			note("other", "#555", strings.TrimSpace(e.Kind+" "+e.Str), "")
		}
		y += seqRowH
	}
	b.WriteString(`</svg>`)
	if len(idle) > 0 {
		fmt.Fprintf(b, `<p class="note">Not drawn: %s, which started and did nothing else.</p>`, esc(strings.Join(idle, ", ")))
	}
	fmt.Fprintf(b, `<p class="note">One row per event, time going down (virtual time on the left; a grey band says how long nothing happened). Arrows are TCP segments from sender to receiver: size and flags (S SYN, F FIN, R RST, P push, . ACK), then the ACK number; blue with data, grey a bare ACK; purple notes are delayed-ACK timers firing; grey notes are fds opened (+) and closed (−) with the count after; red bands are faults; blue bands phases. %d disk I/O events are not drawn.</p>`, disk)
}

// fdChange is one fd opened (+) or closed (−), with its kind.
func fdChange(e event) string {
	sign := "+"
	if e.Open < 0 {
		sign = "−"
	}
	return fmt.Sprintf("%s%d %s", sign, e.Fd, e.Str)
}

// segLabel is what a segment arrow says, and its colour.
func segLabel(e event) (string, string) {
	flags := e.Str
	var s string
	switch {
	case e.Len > 0:
		s = fmt.Sprintf("%d B [%s] ack %d", e.Len, flags, e.Ack)
	default:
		s = fmt.Sprintf("[%s] ack %d win %d", flags, e.Ack, e.Win)
	}
	switch {
	case strings.Contains(flags, "R"):
		return s, "#c0392b"
	case strings.ContainsAny(flags, "SF"):
		return s, "#1e7b34"
	case e.Len > 0:
		return s, "#2c5aa0"
	}
	return s, "#888"
}

var blockInMessage = regexp.MustCompile(`\bblock (\d+)`)

// writeBlockHistory shows porcupine's view of the history of the one block
// the failure is about (named in its message, or the first whose history
// fails), with the rows named after the client processes.
func writeBlockHistory(b *strings.Builder, h *Header, r *properties.Result) {
	if r == nil || len(r.History) == 0 {
		return
	}
	var block uint64
	if m := blockInMessage.FindStringSubmatch(h.Message); m != nil {
		block, _ = strconv.ParseUint(m[1], 10, 64)
	}
	parts := map[uint64][]porcupine.Operation{}
	for _, op := range r.History {
		in, ok := op.Input.(properties.LinInput)
		if !ok {
			continue
		}
		parts[in.Block] = append(parts[in.Block], op)
	}
	if block == 0 || len(parts[block]) == 0 {
		for _, id := range sortedKeys(parts) {
			if porcupine.CheckOperationsTimeout(properties.Model(), parts[id], time.Second) != porcupine.Ok {
				block = id
				break
			}
		}
	}
	if block == 0 {
		fmt.Fprintf(b, `<h2>History</h2><p class="note">Every block's history is linearizable (porcupine); the failure is %s, not the data.</p>`, esc(h.Property))
		return
	}
	// porcupine draws a row for every client id up to the largest:
	// renumber the ids this block uses densely, and name each row.
	sub := slices.Clone(parts[block])
	ids := map[int]bool{}
	for _, op := range sub {
		ids[op.ClientId] = true
	}
	dense := sortedKeys(ids)
	for i := range sub {
		sub[i].ClientId = slices.Index(dense, sub[i].ClientId)
	}
	res, info := porcupine.CheckOperationsVerbose(properties.Model(), sub, 5*time.Second)
	var page bytes.Buffer
	if err := porcupine.Visualize(properties.Model(), info, &page); err != nil {
		fmt.Fprintf(b, `<p class="note">porcupine could not draw the history: %s</p>`, esc(err.Error()))
		return
	}
	verdict := map[porcupine.CheckResult]string{porcupine.Ok: "linearizable", porcupine.Illegal: "NOT linearizable", porcupine.Unknown: "unknown (the checker gave up)"}[res]
	fmt.Fprintf(b, `<h2 id="history">History of block %d (porcupine): %s</h2>`, block, verdict)
	b.WriteString(`<table class="rows"><tr>`)
	for row, id := range dense {
		fmt.Fprintf(b, `<td class="row-name">row %d = %s</td>`, row, esc(rowName(id, h.Config)))
	}
	b.WriteString(`</tr></table>`)
	fmt.Fprintf(b, `<iframe title="porcupine history of block %d" srcdoc="%s"></iframe>`, block, html.EscapeString(page.String()))
	fmt.Fprintf(b, `<p class="note">%d ops on block %d, and its initial state. Hover an op for its details; porcupine shows the longest order of the ops that fits the block-store model.</p>`, len(sub)-1, block)
}

// rowName names porcupine's row for a client id as the harness assigns
// them: 0 the initial states, then ClientWorkers rows per client process.
func rowName(id int, cfg properties.Config) string {
	if id == 0 {
		return "initial state"
	}
	per := max(cfg.ClientWorkers, 1)
	c, w := (id-1)/per, (id-1)%per
	name := fmt.Sprintf("client-%d", c)
	if c >= cfg.Clients {
		name = "admin"
	}
	if per > 1 {
		name += fmt.Sprintf(" worker %d", w)
	}
	return name
}

func sortedKeys[K int | uint64, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func cut(s string, n int) string {
	if n < 4 {
		n = 4
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func esc(s string) string { return html.EscapeString(s) }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// fmtTime is a virtual time in milliseconds with microseconds.
func fmtTime(ns int64) string {
	return fmt.Sprintf("%.3f ms", float64(ns)/1e6)
}

func fmtDur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.1f µs", float64(d)/1e3)
}

func bugNote(bug string) string {
	if bug == "" {
		return ""
	}
	return " · bug " + html.EscapeString(bug)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
