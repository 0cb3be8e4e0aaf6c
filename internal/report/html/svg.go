package html

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// svg builds one inline <svg> drawing. Numbers and gdrcheck's own class
// names are written as they are; every string that may come from the
// input goes through esc (printable, then XML-escaped), so that the
// drawing is well-formed XML whatever the input holds.
type svg struct {
	b strings.Builder
}

// newSVG starts a drawing of w×h user units, scaled to the page's width;
// label is its accessible name.
func newSVG(w, h float64, label string) *svg {
	s := &svg{}
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" width="%s" role="img" aria-label="%s">`,
		num(w), num(h), num(w), esc(label))
	return s
}

// esc makes an input string safe as SVG/XML text or attribute value.
func esc(s string) string { return template.HTMLEscapeString(printable.Line(s)) }

// num prints a coordinate: at most two decimals.
func num(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" || s == "" {
		return "0"
	}
	return s
}

func (s *svg) rect(x, y, w, h float64, class string, title string) {
	if title == "" {
		fmt.Fprintf(&s.b, `<rect x="%s" y="%s" width="%s" height="%s" class="%s"/>`, num(x), num(y), num(w), num(h), class)
		return
	}
	fmt.Fprintf(&s.b, `<rect x="%s" y="%s" width="%s" height="%s" class="%s"><title>%s</title></rect>`, num(x), num(y), num(w), num(h), class, esc(title))
}

// fillRect is a rectangle of a computed colour (the heat map's).
func (s *svg) fillRect(x, y, w, h float64, fill rgb, title string) {
	fmt.Fprintf(&s.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s" class="cell"><title>%s</title></rect>`, num(x), num(y), num(w), num(h), fill, esc(title))
}

func (s *svg) line(x1, y1, x2, y2 float64, class string) {
	fmt.Fprintf(&s.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" class="%s"/>`, num(x1), num(y1), num(x2), num(y2), class)
}

// path draws a polyline through the points, or a quadratic curve when d
// is given directly.
func (s *svg) polyline(pts [][2]float64, class string) {
	if len(pts) == 0 {
		return
	}
	var b strings.Builder
	for i, p := range pts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(num(p[0]) + "," + num(p[1]))
	}
	fmt.Fprintf(&s.b, `<polyline points="%s" class="%s"/>`, b.String(), class)
}

func (s *svg) curve(x1, y1, cx, cy, x2, y2 float64, class, title string) {
	fmt.Fprintf(&s.b, `<path d="M%s %s Q%s %s %s %s" class="%s"><title>%s</title></path>`, num(x1), num(y1), num(cx), num(cy), num(x2), num(y2), class, esc(title))
}

func (s *svg) circle(x, y, r float64, class, title string) {
	fmt.Fprintf(&s.b, `<circle cx="%s" cy="%s" r="%s" class="%s"><title>%s</title></circle>`, num(x), num(y), num(r), class, esc(title))
}

// text writes t at (x, y); anchor is start, middle or end.
func (s *svg) text(x, y float64, anchor, class, t string) {
	fmt.Fprintf(&s.b, `<text x="%s" y="%s" text-anchor="%s" class="%s">%s</text>`, num(x), num(y), anchor, class, esc(t))
}

// textRot writes t rotated by -90° about (x, y): a y axis' title.
func (s *svg) textRot(x, y float64, class, t string) {
	fmt.Fprintf(&s.b, `<text x="%s" y="%s" text-anchor="middle" transform="rotate(-90 %s %s)" class="%s">%s</text>`, num(x), num(y), num(x), num(y), class, esc(t))
}

func (s *svg) group(class string)  { fmt.Fprintf(&s.b, `<g class="%s">`, class) }
func (s *svg) endGroup()           { s.b.WriteString(`</g>`) }
func (s *svg) done() template.HTML { s.b.WriteString(`</svg>`); return template.HTML(s.b.String()) }

// statusClass is the CSS class of a status ("st-fail"); "st-none" for a
// part nothing judged.
func statusClass(st result.Status) string {
	if st == "" {
		return "st-none"
	}
	return "st-" + string(st)
}

// rgb is a colour.
type rgb struct{ r, g, b uint8 }

func (c rgb) String() string { return fmt.Sprintf("#%02x%02x%02x", c.r, c.g, c.b) }

// ramp is the heat map's colour for t in [0, 1]: from pale to deep blue,
// linear in each channel.
func ramp(t float64) rgb {
	if t < 0 {
		t = 0
	}
	if t > 1 {
		t = 1
	}
	lo, hi := rgb{0xef, 0xf3, 0xff}, rgb{0x08, 0x30, 0x6b}
	mix := func(a, b uint8) uint8 { return uint8(float64(a) + (float64(b)-float64(a))*t + 0.5) }
	return rgb{mix(lo.r, hi.r), mix(lo.g, hi.g), mix(lo.b, hi.b)}
}
