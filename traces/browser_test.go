package traces

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"xceiver/properties"
)

// headlessChromium finds a browser that can render a page without a
// display, or "".
func headlessChromium() string {
	for _, name := range []string{"chromium-headless-shell", "chrome-headless-shell", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// probe runs in the page once it is laid out in a 1400×1000 window and
// records what is on screen in an attribute that --dump-dom prints.
const probe = `<script>
window.addEventListener('load', () => {
  const r = el => { const b = el.getBoundingClientRect(); return {top: b.top, right: b.right, bottom: b.bottom}; };
  const h1 = document.querySelector('h1'), msg = document.querySelector('.msg');
  const svg = document.querySelector('svg.sequence'), frame = document.querySelector('iframe');
  const out = {
    width: innerWidth, height: innerHeight,
    scrollWidth: document.documentElement.scrollWidth,
    h1: h1 ? h1.textContent : '', h1Box: h1 ? r(h1) : null, msgBox: msg ? r(msg) : null,
    firstHeading: (document.querySelector('h1,h2') || {}).tagName,
    lifelines: [...document.querySelectorAll('.lifeline-name')].map(e => e.textContent),
    segs: document.querySelectorAll('svg.sequence .seg').length,
    focus: document.querySelectorAll('svg.sequence .focus').length,
    svgBox: svg ? r(svg) : null, frameBox: frame ? r(frame) : null,
    rowNames: [...document.querySelectorAll('.row-name')].map(e => e.textContent),
  };
  document.body.setAttribute('data-probe', JSON.stringify(out));
});
</script>`

type probeResult struct {
	Width, Height, ScrollWidth float64
	H1                         string
	H1Box, MsgBox              *struct{ Top, Right, Bottom float64 }
	FirstHeading               string
	Lifelines                  []string
	Segs, Focus                int
	SvgBox, FrameBox           *struct{ Top, Right, Bottom float64 }
	RowNames                   []string
}

// The viewer renders in a real browser at 1400×1000: the failure and its
// property are the first thing on screen, nothing scrolls sideways, the
// sequence diagram has its lifelines and segments, and porcupine's view
// of the failing block fits the width with its rows named.
func TestHTMLInHeadlessChromium(t *testing.T) {
	browser := headlessChromium()
	if browser == "" {
		t.Skip("no headless Chromium found (Debian: apt-get install chromium-headless-shell); the viewer is not checked in a browser")
	}
	for _, name := range []string{"stale-handle", "HDFS-4911"} {
		t.Run(name, func(t *testing.T) {
			tr, err := ReadFile(filepath.Join("corpus", name+".trace"))
			if err != nil {
				t.Fatal(err)
			}
			rep := Replay(tr, properties.Options{Verbose: true})
			var page bytes.Buffer
			if err := WriteHTML(&page, tr, rep.Result); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "view.html")
			os.WriteFile(path, []byte(strings.Replace(page.String(), "</body>", probe+"</body>", 1)), 0o644)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1400,1000", "--virtual-time-budget=5000"}
			out, err := exec.CommandContext(ctx, browser, append(args, "--dump-dom", "file://"+path)...).Output()
			if err != nil {
				t.Fatalf("%s: %v", browser, err)
			}
			if shots := os.Getenv("XCEIVER_SCREENSHOTS"); shots != "" {
				// To look at the page: XCEIVER_SCREENSHOTS=DIR go test ./traces -run Chromium
				shot := filepath.Join(shots, name+".png")
				exec.CommandContext(ctx, browser, append(args, "--screenshot="+shot, "file://"+path)...).Run()
				t.Logf("screenshot: %s", shot)
			}
			m := regexp.MustCompile(`data-probe="([^"]*)"`).FindSubmatch(out)
			if m == nil {
				t.Fatalf("the page's probe did not run; DOM starts %.300s", out)
			}
			var got probeResult
			if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &got); err != nil {
				t.Fatal(err)
			}
			if got.Width != 1400 || got.ScrollWidth > got.Width {
				t.Errorf("the page is %v wide in a %v window: it scrolls sideways", got.ScrollWidth, got.Width)
			}
			if got.FirstHeading != "H1" || got.H1 != "FAIL: "+tr.Header.Property || got.H1Box == nil || got.H1Box.Top > 100 {
				t.Errorf("the failure is not first: heading %s %q at %+v", got.FirstHeading, got.H1, got.H1Box)
			}
			if got.MsgBox == nil || got.MsgBox.Bottom > got.Height {
				t.Errorf("the failure's message is not on the first screen: %+v", got.MsgBox)
			}
			if len(got.Lifelines) < 2 || got.Lifelines[0] != "datanode" || got.Segs < 4 {
				t.Errorf("sequence diagram: lifelines %q, %d segments", got.Lifelines, got.Segs)
			}
			if strings.Contains(tr.Header.Message, "block ") && got.Focus == 0 {
				t.Errorf("the failure names a block, but no op on it is marked in the diagram")
			}
			if got.SvgBox == nil || got.SvgBox.Right > got.Width || got.FrameBox == nil || got.FrameBox.Right > got.Width {
				t.Errorf("diagram %+v or porcupine view %+v wider than the window", got.SvgBox, got.FrameBox)
			}
			if len(got.RowNames) < 2 || got.RowNames[0] != "row 0 = initial state" || !strings.Contains(got.RowNames[1], "client-") {
				t.Errorf("porcupine rows named %q", got.RowNames)
			}
		})
	}
}
