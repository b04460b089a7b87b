package runcard_test

import (
	"fmt"
	"math"
	"strings"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// minContrast is WCAG 2's AA ratio for normal text.
const minContrast = 4.5

// requireContrast checks that the text of each element meets minContrast on the
// background it sits on (its own, else the given ancestor's), in the card as it stands.
func (c *card) requireContrast(pairs map[string]string) {
	c.t.Helper()
	for text, on := range pairs {
		fg := c.color(text, "color")
		bg := c.color(text, "background-color")
		if bg[3] == 0 {
			bg = c.color(on, "background-color")
		}
		ratio := contrast(fg, bg)
		require.GreaterOrEqual(c.t, ratio, minContrast, "%s: %v on %v", text, fg, bg)
	}
}

// color reads a computed colour of sel as r, g, b (0–255) and alpha (0–1).
func (c *card) color(sel, property string) [4]float64 {
	c.t.Helper()
	props, err := chromedp.Run(c.ctx, chromedp.ComputedStyle(css(sel), c.in()))
	require.NoError(c.t, err)
	for _, p := range props {
		if p.Name == property {
			return parseColor(c.t, p.Value)
		}
	}
	c.t.Fatalf("%s has no %s", sel, property)
	return [4]float64{}
}

func parseColor(t require.TestingT, v string) [4]float64 {
	out := [4]float64{0, 0, 0, 1}
	inner, ok := strings.CutPrefix(v, "rgba(")
	if !ok {
		inner, ok = strings.CutPrefix(v, "rgb(")
	}
	require.True(t, ok, "a colour in rgb(): %s", v)
	parts := strings.Split(strings.TrimSuffix(inner, ")"), ",")
	for i, p := range parts {
		_, err := fmt.Sscan(strings.TrimSpace(p), &out[i])
		require.NoError(t, err, v)
	}
	return out
}

// contrast is the WCAG contrast ratio of two opaque colours.
func contrast(a, b [4]float64) float64 {
	la, lb := luminance(a), luminance(b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}

func luminance(c [4]float64) float64 {
	lin := func(v float64) float64 {
		v /= 255
		if v <= 0.03928 {
			return v / 12.92
		}
		return math.Pow((v+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(c[0]) + 0.7152*lin(c[1]) + 0.0722*lin(c[2])
}
