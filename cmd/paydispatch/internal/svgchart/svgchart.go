package svgchart

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Palette is the colour of the n-th series.
var Palette = []string{"#3b6ea8", "#e08e2b", "#3a9e5b", "#c0392b", "#8e5ea2", "#6c757d", "#17a2b8", "#b8860b"}

// Series is one named line.
type Series struct {
	Name   string
	Values []float64
}

const (
	height           = 300.0
	top, left, below = 30.0, 56.0, 46.0
	plotW            = 760.0
)

type canvas struct {
	b        strings.Builder
	width    float64
	peak     float64
	titleTxt string
}

func newCanvas(title string, peak float64) *canvas {
	if peak <= 0 {
		peak = 1
	}
	c := &canvas{width: left + plotW + 24, peak: peak, titleTxt: title}
	fmt.Fprintf(&c.b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="%s" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n",
		html.EscapeString(title), c.width, height, c.width, height)
	fmt.Fprintf(&c.b, "<title>%s</title>\n", html.EscapeString(title))
	fmt.Fprintf(&c.b, `<text x="%.1f" y="16" font-size="13" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	return c
}

func (c *canvas) y(v float64) float64 { return top + (height-top-below)*(1-v/c.peak) }

func (c *canvas) axes(xLabel string) {
	fmt.Fprintf(&c.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, left, top, c.y(0))
	fmt.Fprintf(&c.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, left+plotW, c.y(0), c.y(0))
	for _, f := range []float64{0, 0.5, 1} {
		v := c.peak * f * 0.9
		fmt.Fprintf(&c.b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-4, c.y(v)+4, num(v))
	}
	fmt.Fprintf(&c.b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", left, height-10, html.EscapeString(xLabel))
}

func (c *canvas) end() string {
	c.b.WriteString("</svg>\n")
	return c.b.String()
}

func num(v float64) string {
	if v >= 100 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func peakOf(vals []float64, floor float64) float64 {
	p := floor
	for _, v := range vals {
		p = math.Max(p, v)
	}
	return p * 1.12
}

// Columns draws one column per value (e.g. per second), with a red line at
// limit and a green band of ±band around it when limit > 0.
func Columns(title, xLabel string, values []float64, limit, band float64) string {
	c := newCanvas(title, peakOf(values, limit))
	n := max(len(values), 1)
	w := plotW / float64(n)
	if limit > 0 && band > 0 {
		fmt.Fprintf(&c.b, `<rect x="%.1f" y="%.2f" width="%.1f" height="%.2f" fill="#e6f4ea"/>`+"\n",
			left, c.y(limit*(1+band)), plotW, c.y(limit*(1-band))-c.y(limit*(1+band)))
	}
	for i, v := range values {
		fmt.Fprintf(&c.b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"/>`+"\n",
			left+w*float64(i), c.y(v), math.Max(w*0.85, 0.5), c.y(0)-c.y(v), Palette[0])
	}
	if limit > 0 {
		fmt.Fprintf(&c.b, `<line x1="%.1f" x2="%.1f" y1="%.2f" y2="%.2f" stroke="#c0392b" stroke-width="1.5"/>`+"\n", left, left+plotW, c.y(limit), c.y(limit))
		fmt.Fprintf(&c.b, `<text x="%.1f" y="%.2f" fill="#c0392b" text-anchor="end">limit %s</text>`+"\n", left+plotW, c.y(limit)-4, num(limit))
	}
	c.axes(xLabel)
	return c.end()
}

// Lines draws each series as a line over the same x steps, with a legend.
func Lines(title, xLabel string, series []Series) string {
	var all []float64
	n := 1
	for _, s := range series {
		all = append(all, s.Values...)
		n = max(n, len(s.Values))
	}
	c := newCanvas(title, peakOf(all, 0))
	step := plotW / float64(max(n-1, 1))
	for i, s := range series {
		colour := Palette[i%len(Palette)]
		var pts []string
		for j, v := range s.Values {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", left+step*float64(j), c.y(v)))
		}
		if len(pts) == 1 {
			pts = append(pts, pts[0])
		}
		fmt.Fprintf(&c.b, `<polyline fill="none" stroke="%s" stroke-width="1.8" points="%s"/>`+"\n", colour, strings.Join(pts, " "))
		fmt.Fprintf(&c.b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`+"\n",
			left+plotW-140, top+float64(i)*14, colour, left+plotW-126, top+float64(i)*14+9, html.EscapeString(s.Name))
	}
	c.axes(xLabel)
	return c.end()
}

// HBars draws one horizontal bar per label, its value written beside it.
func HBars(title string, labels []string, values []float64) string {
	c := newCanvas(title, peakOf(values, 0))
	rowH := (height - top - below) / float64(max(len(values), 1))
	barH := math.Min(rowH*0.7, 28)
	labelW := 110.0
	for i, v := range values {
		y := top + rowH*float64(i) + (rowH-barH)/2
		w := (plotW - labelW) * v / c.peak
		fmt.Fprintf(&c.b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left+labelW-6, y+barH/2+4, html.EscapeString(labels[i]))
		fmt.Fprintf(&c.b, `<rect x="%.1f" y="%.1f" width="%.2f" height="%.1f" fill="%s"/>`+"\n", left+labelW, y, math.Max(w, 0.5), barH, Palette[i%len(Palette)])
		fmt.Fprintf(&c.b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", left+labelW+w+6, y+barH/2+4, num(v))
	}
	c.b.WriteString("</svg>\n")
	return c.b.String()
}
