package traces

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"slices"
	"strings"

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
		case "crash", "spawn":
		}
		evs = append(evs, e)
	}
	return evs
}

// connSpan is one end of a connection from its fd's open to its close.
type connSpan struct {
	id         uint64
	proc, peer string
	from, to   int64
	segs       []event
}

func spans(evs []event, end int64) []*connSpan {
	open := make(map[uint64]*connSpan)
	var all []*connSpan
	for _, e := range evs {
		switch e.Kind {
		case "connect", "accept":
			s := &connSpan{id: e.Conn, proc: e.Proc, peer: e.Str, from: e.T, to: end}
			open[e.Conn] = s
			all = append(all, s)
		case "close":
			if s := open[e.Conn]; s != nil && s.proc == e.Proc {
				s.to = e.T
				delete(open, e.Conn)
			}
		case "seg":
			if s := open[e.Conn]; s != nil {
				s.segs = append(s.segs, e)
			}
		}
	}
	return all
}

// WriteHTML renders a replay of t: porcupine's view of the history (with
// faults, phases and connections as annotations), then a timeline of
// connections, segments and fds per process.
func WriteHTML(w io.Writer, t *Trace, r *properties.Result) error {
	evs := parseEvents(t.Events)
	var end int64
	for _, e := range evs {
		end = max(end, e.T)
	}
	info := r.LinInfo
	var notes []porcupine.Annotation
	for _, e := range evs {
		switch e.Kind {
		case "fault":
			notes = append(notes, porcupine.Annotation{Tag: "faults", Start: e.T, Description: e.Str, Details: e.Proc, BackgroundColor: "#f8c9c4"})
		case "crash":
			notes = append(notes, porcupine.Annotation{Tag: "faults", Start: e.T, Description: "crash " + e.Proc, BackgroundColor: "#f8c9c4"})
		case "phase":
			notes = append(notes, porcupine.Annotation{Tag: "phases", Start: e.T, Description: e.Str, BackgroundColor: "#dde6f5"})
		}
	}
	conns := spans(evs, end)
	for i, s := range conns {
		if i == 60 {
			break // the SVG timeline below shows them all
		}
		notes = append(notes, porcupine.Annotation{
			Tag: fmt.Sprintf("conn %d %s", s.id, s.proc), Start: s.from, End: s.to,
			Description: fmt.Sprintf("%d segs", len(s.segs)), Details: s.proc + " ↔ " + s.peer, BackgroundColor: "#e4f2e0",
		})
	}
	info.AddAnnotations(notes)
	var page bytes.Buffer
	if err := porcupine.Visualize(properties.Model(), info, &page); err != nil {
		return err
	}
	section := timelineHTML(t, evs, conns, end, r)
	out := page.String()
	if i := strings.LastIndex(out, "</body>"); i >= 0 {
		out = out[:i] + section + out[i:]
	} else {
		out += section
	}
	_, err := io.WriteString(w, out)
	return err
}

// WriteHTMLFile writes the rendering to path.
func WriteHTMLFile(path string, t *Trace, r *properties.Result) error {
	var b bytes.Buffer
	if err := WriteHTML(&b, t, r); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func timelineHTML(t *Trace, evs []event, conns []*connSpan, end int64, r *properties.Result) string {
	const (
		width  = 1400.0
		left   = 190.0
		rowH   = 16.0
		fdRowH = 48.0
	)
	x := timeAxis(evs, end, left, width-10)
	var b strings.Builder
	h := &t.Header
	fmt.Fprintf(&b, `<section style="font:12px sans-serif;margin:16px">`)
	fmt.Fprintf(&b, `<h2>xceiver trace: %s</h2><p>%s</p>`, html.EscapeString(h.Property), html.EscapeString(h.Message))
	fmt.Fprintf(&b, `<p>seed %d%s · %d events · hash %s · code %s · linearizability %s · virtual time %.3f ms</p>`,
		h.Seed, bugNote(h.Bug), h.Events, h.TraceHash, html.EscapeString(h.CodeVersion), r.Lin, float64(end)/1e6)

	// fds per process
	var procs []string
	for _, e := range evs {
		if e.Kind == "fd" && !slices.Contains(procs, e.Proc) {
			procs = append(procs, e.Proc)
		}
	}
	var faults, phases []event
	for _, e := range evs {
		switch e.Kind {
		case "fault", "crash":
			faults = append(faults, e)
		case "phase":
			phases = append(phases, e)
		}
	}
	height := 30 + float64(len(procs))*fdRowH + float64(len(conns))*rowH + 20
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" style="border:1px solid #ccc">`, width, height)
	for _, e := range phases {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="14" x2="%.1f" y2="%.0f" stroke="#8fa8d8" stroke-dasharray="3,3"/><text x="%.1f" y="12" fill="#3a5a9a">%s</text>`,
			x(e.T), x(e.T), height, x(e.T)+2, html.EscapeString(e.Str))
	}
	for _, e := range faults {
		what := e.Str
		if e.Kind == "crash" {
			what = "crash"
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="20" x2="%.1f" y2="%.0f" stroke="#d9534f" stroke-width="1"><title>%s %s</title></line>`,
			x(e.T), x(e.T), height, html.EscapeString(e.Proc), html.EscapeString(what))
	}
	y := 30.0
	for _, p := range procs {
		var pts []string
		var peak int64 = 1
		for _, e := range evs {
			if e.Kind == "fd" && e.Proc == p {
				peak = max(peak, e.Tot)
			}
		}
		last := int64(0)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(0), y+fdRowH-6))
		for _, e := range evs {
			if e.Kind != "fd" || e.Proc != p {
				continue
			}
			yy := func(n int64) float64 { return y + fdRowH - 6 - (fdRowH-12)*float64(n)/float64(peak) }
			pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(e.T), yy(last), x(e.T), yy(e.Tot)))
			last = e.Tot
		}
		fmt.Fprintf(&b, `<text x="4" y="%.1f">%s fds (peak %d)</text>`, y+fdRowH/2, html.EscapeString(p), peak)
		fmt.Fprintf(&b, `<polyline fill="none" stroke="#555" points="%s %.1f,%.1f"/>`, strings.Join(pts, " "), x(end), y+fdRowH-6-(fdRowH-12)*float64(last)/float64(peak))
		y += fdRowH
	}
	for _, s := range conns {
		color := "#4a8f3c"
		if s.proc == "datanode" {
			color = "#8a5fb0"
		}
		fmt.Fprintf(&b, `<text x="4" y="%.1f">conn %d %s</text>`, y+11, s.id, html.EscapeString(s.proc))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="6" fill="%s" opacity="0.35"><title>%s ↔ %s</title></rect>`,
			x(s.from), y+5, max(x(s.to)-x(s.from), 1), color, html.EscapeString(s.proc), html.EscapeString(s.peer))
		for _, g := range s.segs {
			hgt := 4.0
			if g.Len > 0 {
				hgt = 12
			}
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"><title>%s len %d</title></line>`,
				x(g.T), y+8-hgt/2, x(g.T), y+8+hgt/2, color, html.EscapeString(g.Str), g.Len)
		}
		y += rowH
	}
	b.WriteString(`</svg>`)
	b.WriteString(`<p>Time runs left to right on a compressed axis (a gap between events takes room growing with its logarithm). Grey lines: fds open per process. Bars: a connection from its fd's open to its close (green: client end, purple: datanode end); ticks: segments it sent (tall: with data). Red lines: faults. Blue dashes: phases.</p></section>`)
	return b.String()
}

// timeAxis maps virtual time to x so that every event stays visible: each
// gap between consecutive event times takes room growing with its
// logarithm, so long idle waits (keep-alives, timeouts) do not squash the
// busy moments.
func timeAxis(evs []event, end int64, left, right float64) func(int64) float64 {
	times := []int64{0, end}
	for _, e := range evs {
		times = append(times, e.T)
	}
	slices.Sort(times)
	times = slices.Compact(times)
	pos := make([]float64, len(times))
	for i := 1; i < len(times); i++ {
		pos[i] = pos[i-1] + 1 + math.Log1p(float64(times[i]-times[i-1])/1e3)
	}
	total := max(pos[len(pos)-1], 1)
	return func(t int64) float64 {
		i, found := slices.BinarySearch(times, t)
		p := 0.0
		switch {
		case found:
			p = pos[i]
		case i >= len(times):
			p = total
		case i > 0:
			p = pos[i-1] + (pos[i]-pos[i-1])*float64(t-times[i-1])/float64(times[i]-times[i-1])
		}
		return left + (right-left)*p/total
	}
}

func bugNote(bug string) string {
	if bug == "" {
		return ""
	}
	return " · bug " + html.EscapeString(bug)
}
