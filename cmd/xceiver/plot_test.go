package main

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// svgElems parses an SVG and returns its elements' names and attributes.
func svgElems(t *testing.T, b []byte) []xml.StartElement {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var out []xml.StartElement
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatalf("the SVG does not parse: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			out = append(out, se.Copy())
		}
	}
}

func attr(se xml.StartElement, name string) string {
	for _, a := range se.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func TestPlotCarriesSeriesAndPublishedFigures(t *testing.T) {
	ex := experiments()["hdfs-941"]
	rows := []benchRow{
		{"sim", "nodelay=false", "throughput", 0.76, "MB/s"}, {"sim", "nodelay=true", "throughput", 1587, "MB/s"},
		{"real", "nodelay=false", "throughput", 0.73, "MB/s"}, {"real", "nodelay=true", "throughput", 211, "MB/s"},
		{"sim", "nodelay=false", "p50", 44, "ms"}, {"real", "nodelay=false", "p50", 44.3, "ms"},
	}
	var buf bytes.Buffer
	if err := writePlot(&buf, "hdfs-941", ex, rows); err != nil {
		t.Fatal(err)
	}
	elems := svgElems(t, buf.Bytes())
	if len(elems) == 0 || elems[0].Name.Local != "svg" {
		t.Fatal("not an SVG document")
	}
	bars := map[string]float64{}
	published := map[string]float64{}
	panels := map[string]string{}
	for _, e := range elems {
		switch {
		case e.Name.Local == "rect" && attr(e, "class") == "bar":
			v, _ := strconv.ParseFloat(attr(e, "data-value"), 64)
			bars[attr(e, "data-world")+" "+attr(e, "data-case")+" "+attr(e, "data-metric")] = v
		case e.Name.Local == "line" && attr(e, "class") == "published":
			v, _ := strconv.ParseFloat(attr(e, "data-value"), 64)
			published[attr(e, "data-case")+" "+attr(e, "data-metric")] = v
		case e.Name.Local == "g" && attr(e, "class") == "panel":
			panels[attr(e, "data-metric")] = attr(e, "data-scale")
		}
		for _, a := range e.Attr {
			if a.Name.Local == "href" {
				t.Errorf("not self-contained: %s links to %s", e.Name.Local, a.Value)
			}
		}
		if e.Name.Local == "script" {
			t.Error("the SVG has a script")
		}
	}
	for _, r := range rows {
		if v, ok := bars[r.World+" "+r.Case+" "+r.Metric]; !ok || v != r.Value {
			t.Errorf("bar %s %s %s: %v, %v; want %v", r.World, r.Case, r.Metric, v, ok, r.Value)
		}
	}
	if published["nodelay=false throughput"] != 12 || published["nodelay=true throughput"] != 274 {
		t.Errorf("published marks %v, want 12 and 274 MB/s", published)
	}
	if panels["throughput"] != "log" || panels["p50"] != "linear" {
		t.Errorf("panels %v: throughput spans three orders of magnitude (log), p50 does not", panels)
	}
}

func TestBenchPlotFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.svg")
	code, _, stderr := runCLI("bench", "HDFS-941", "--plot", path)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range svgElems(t, b) {
		if e.Name.Local == "rect" && attr(e, "class") == "bar" && attr(e, "data-world") == "sim" {
			n++
		}
	}
	if n != 15 {
		t.Errorf("%d sim bars, want 15 (for 4 readers, 16 readers and 2 files × 4: p50 and throughput with and without NODELAY, and the ratio)", n)
	}
	if code, _, stderr := runCLI("bench", "hdfs-941", "--plot", t.TempDir()); code != exitUsage {
		t.Errorf("--plot a directory: exit %d: %s", code, stderr)
	}
}
