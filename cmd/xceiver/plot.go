package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// figure is a published number an experiment reproduces, marked on its
// plot beside the measured bars of the same case and metric.
type figure struct {
	Case, Metric string
	Value        float64
}

// Plot geometry, in SVG user units (pixels).
const (
	plotPanelW  = 440
	plotPanelH  = 280
	plotCols    = 3
	plotHeaderH = 78
	plotMarginL = 64
	plotMarginR = 16
	plotMarginT = 34
	plotMarginB = 46
)

var worldColors = map[string]string{"sim": "#3b6fb6", "real": "#e08a1e"}

// writePlot draws an experiment's rows as a self-contained SVG: one panel
// per metric, a group of bars per case (one bar per world), and the
// published figures as dashed marks. No scripts, fonts or links: it opens
// anywhere and embeds in a page.
func writePlot(w io.Writer, name string, ex experiment, rows []benchRow) error {
	var metrics []string
	for _, r := range rows {
		if !contains(metrics, r.Metric) {
			metrics = append(metrics, r.Metric)
		}
	}
	cols := min(plotCols, max(len(metrics), 1))
	nrows := (len(metrics) + cols - 1) / cols
	width := cols * plotPanelW
	height := plotHeaderH + max(nrows, 1)*plotPanelH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<title>xceiver bench %s</title>`+"\n", esc(name))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="12" y="22" font-size="16" font-weight="bold">%s: %s</text>`+"\n", esc(name), esc(ex.desc))
	fmt.Fprintf(&b, `<text x="12" y="42" fill="#444">published: %s</text>`+"\n", esc(strings.TrimPrefix(ex.published, "published: ")))
	// Legend.
	x := 12
	for _, wname := range worldsIn(rows) {
		fmt.Fprintf(&b, `<rect x="%d" y="54" width="12" height="12" fill="%s"/><text x="%d" y="65">%s</text>`+"\n", x, worldColor(wname), x+16, esc(wname))
		x += 70
	}
	if len(ex.figures) > 0 {
		fmt.Fprintf(&b, `<line x1="%d" y1="60" x2="%d" y2="60" stroke="#c0392b" stroke-width="2" stroke-dasharray="5,3"/><text x="%d" y="65">published</text>`+"\n", x, x+18, x+22)
	}
	for i, m := range metrics {
		px := (i % cols) * plotPanelW
		py := plotHeaderH + (i/cols)*plotPanelH
		plotPanel(&b, px, py, m, rows, ex.figures)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func plotPanel(b *strings.Builder, px, py int, metric string, rows []benchRow, figs []figure) {
	var cases, worlds []string
	unit := ""
	lo, hi := math.Inf(1), math.Inf(-1)
	note := func(v float64) {
		if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	for _, r := range rows {
		if r.Metric != metric {
			continue
		}
		if !contains(cases, r.Case) {
			cases = append(cases, r.Case)
		}
		if !contains(worlds, r.World) {
			worlds = append(worlds, r.World)
		}
		unit = r.Unit
		note(r.Value)
	}
	for _, f := range figs {
		if f.Metric == metric && contains(cases, f.Case) {
			note(f.Value)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
	}
	// Orders of magnitude apart (NODELAY off vs on): a log axis, so both
	// bars and the published marks stay readable.
	logScale := hi/lo > 50
	var y0, y1 float64
	if logScale {
		y0, y1 = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
	} else {
		y0, y1 = 0, niceCeil(hi*1.1)
	}
	left, top := float64(px+plotMarginL), float64(py+plotMarginT)
	w := float64(plotPanelW - plotMarginL - plotMarginR)
	h := float64(plotPanelH - plotMarginT - plotMarginB)
	yOf := func(v float64) float64 {
		var f float64
		if logScale {
			f = (math.Log10(math.Max(v, y0)) - math.Log10(y0)) / (math.Log10(y1) - math.Log10(y0))
		} else {
			f = (v - y0) / (y1 - y0)
		}
		return top + h - math.Max(0, math.Min(1, f))*h
	}
	scale := "linear"
	if logScale {
		scale = "log"
	}
	fmt.Fprintf(b, `<g class="panel" data-metric="%s" data-scale="%s">`+"\n", esc(metric), scale)
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s (%s%s)</text>`+"\n", px+12, py+20, esc(metric), esc(unit), map[bool]string{true: ", log scale"}[logScale])
	// Axis and ticks.
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888"/>`+"\n", left, top, left, top+h)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888"/>`+"\n", left, top+h, left+w, top+h)
	for _, t := range ticks(y0, y1, logScale) {
		y := yOf(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", left+1, y, left+w, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#555">%s</text>`+"\n", left-4, y+4, fmtTick(t))
	}
	if len(cases) == 0 {
		b.WriteString("</g>\n")
		return
	}
	groupW := w / float64(len(cases))
	barW := math.Min(48, groupW*0.7/float64(max(len(worlds), 1)))
	for ci, c := range cases {
		gx := left + groupW*float64(ci)
		start := gx + (groupW-barW*float64(len(worlds)))/2
		for wi, wname := range worlds {
			for _, r := range rows {
				if r.Metric != metric || r.Case != c || r.World != wname {
					continue
				}
				y := yOf(r.Value)
				fmt.Fprintf(b, `<rect class="bar" data-world="%s" data-case="%s" data-metric="%s" data-value="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s %s: %s %s</title></rect>`+"\n",
					esc(wname), esc(c), esc(metric), strconv.FormatFloat(r.Value, 'g', 6, 64),
					start+barW*float64(wi), y, barW-2, top+h-y, worldColor(wname),
					esc(wname), esc(c), esc(metric), fmtTick(r.Value), esc(r.Unit))
				fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10" stroke="white" stroke-width="3" paint-order="stroke">%s</text>`+"\n", start+barW*float64(wi)+barW/2-1, y-3, fmtTick(r.Value))
			}
		}
		for _, f := range figs {
			if f.Metric != metric || f.Case != c {
				continue
			}
			y := yOf(f.Value)
			fmt.Fprintf(b, `<line class="published" data-case="%s" data-metric="%s" data-value="%s" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#c0392b" stroke-width="2" stroke-dasharray="5,3"><title>published: %s</title></line>`+"\n",
				esc(c), esc(metric), strconv.FormatFloat(f.Value, 'g', 6, 64), gx+4, y, gx+groupW-4, y, fmtTick(f.Value))
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="10" fill="#c0392b" stroke="white" stroke-width="3" paint-order="stroke">published %s</text>`+"\n", gx+groupW-4, y-3, fmtTick(f.Value))
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", gx+groupW/2, top+h+16, esc(c))
	}
	b.WriteString("</g>\n")
}

func worldsIn(rows []benchRow) []string {
	var ws []string
	for _, r := range rows {
		if !contains(ws, r.World) {
			ws = append(ws, r.World)
		}
	}
	return ws
}

func worldColor(w string) string {
	if c, ok := worldColors[w]; ok {
		return c
	}
	return "#777"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func esc(s string) string { return html.EscapeString(s) }

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func ticks(y0, y1 float64, logScale bool) []float64 {
	var ts []float64
	if logScale {
		for t := y0; t <= y1*1.0001; t *= 10 {
			ts = append(ts, t)
		}
		return ts
	}
	step := niceCeil(y1 / 5)
	for t := y0; t <= y1*1.0001; t += step {
		ts = append(ts, t)
	}
	return ts
}

func fmtTick(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	case a >= 1:
		return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}
