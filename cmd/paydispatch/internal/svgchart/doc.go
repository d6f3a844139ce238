// Package svgchart draws the few charts paydispatch's reports need as
// self-contained SVG: columns over time against a limit, lines over time,
// and horizontal bars per category. No script and no external file: an
// SVG string can be written alone or inlined into an HTML report.
package svgchart
