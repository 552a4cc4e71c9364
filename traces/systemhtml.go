package traces

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// SystemTrace is what the page of a JSON trace shows (the rpc, sc and
// scenario systems record their case and verdict, not their events: a
// replay with the event log on gives those).
type SystemTrace struct {
	System    string // rpc, sc or scenario
	Seed      uint64
	Bug       string
	Property  string
	Message   string
	Events    uint64
	TraceHash string
	Format    string
	Case      any // shown as indented JSON
	// Reproduced: the replay that logged the events failed the same way.
	Reproduced bool
}

// WriteSystemHTML renders a replay of a JSON trace as WriteHTML does a
// data-path trace: the failure first, then the sequence diagram of the
// replay's events (JSON lines, as sim writes them), then the case.
func WriteSystemHTML(w io.Writer, t SystemTrace, events [][]byte) error {
	evs := parseEvents(events)
	var b strings.Builder
	b.WriteString(pageHead(t.Property))
	fmt.Fprintf(&b, `<header id="failure"><h1>FAIL: <span class="prop">%s</span></h1><p class="msg">%s</p>`, esc(t.Property), esc(t.Message))
	verdict := "reproduced"
	if !t.Reproduced {
		verdict = "not reproduced by this replay"
	}
	end := int64(0)
	for _, e := range evs {
		end = max(end, e.T)
	}
	fmt.Fprintf(&b, `<p class="meta">%s · %s system · seed %d%s · %d events over %s of virtual time · trace hash %s · format %s · replay: %s</p>`,
		esc(propertyMeaning(t.Property)), esc(t.System), t.Seed, bugNote(t.Bug), t.Events, fmtDur(end), esc(t.TraceHash), esc(t.Format), verdict)
	again := fmt.Sprintf("xceiver check --system %s --seed %d", t.System, t.Seed)
	if t.Bug != "" {
		again = fmt.Sprintf("xceiver check --seed %d --bug %s", t.Seed, t.Bug)
	}
	fmt.Fprintf(&b, `<p class="meta">Record it again: <code>%s</code></p></header>`, esc(again))
	b.WriteString(`<h2>What happened</h2>`)
	writeSequence(&b, evs, "")
	b.WriteString(`<h2>The case</h2>`)
	c, err := json.MarshalIndent(t.Case, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(&b, `<pre class="case">%s</pre>`, esc(string(c)))
	b.WriteString("</body></html>\n")
	_, err = io.WriteString(w, b.String())
	return err
}
