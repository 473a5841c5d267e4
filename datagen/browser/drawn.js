// Text as the screen draws it (issue 44), for elements.js, which includes this file where it
// marks the include (datagen/browser/observe.py puts it in). A name or an anchor may quote
// text only where the screenshot shows it: a text node counts when it has a size (a box of at
// least 2 × 2 px, a font size of 1 px or more), is not clipped away or moved off the viewport
// (`overflow` boxes, `clip`, `clip-path: inset(50%)`, `text-indent: -9999px`), is not
// transparent (its colour, or `opacity: 0` on it or an ancestor; gradient text drawn through
// `background-clip: text` counts), and is not covered (the first thing that paints at its
// centre, other than the text itself and its ancestors, hides it). A label at `font-size: 0`
// beside a glyph, an icon's word moved off-screen, a card's face-down value, a label under a
// popup: none is drawn, so none names anything.
({ clean, parentOf, within, visible, UNRENDERED }) => {
  const FULL = { left: -Infinity, top: -Infinity, right: Infinity, bottom: Infinity };
  const cut = (a, b) => ({
    left: Math.max(a.left, b.left), top: Math.max(a.top, b.top),
    right: Math.min(a.right, b.right), bottom: Math.min(a.bottom, b.bottom),
  });
  // `rgba(0, 0, 0, 0)`, `transparent`, `color(srgb 0 0 0 / 0)`
  const transparent = (c) => !c || c === 'transparent' ||
    /^rgba\([^)]*,\s*0(\.0+)?\)$/.test(c) || /\/\s*0(\.0+)?%?\s*\)$/.test(c);
  const LAYOUT_ROOTS = new Set(['HTML', 'BODY']);  // their overflow is the viewport's
  // The box outside which an element's content is not drawn (viewport coordinates of its own
  // document): the overflow boxes of the ancestors that contain it (an absolutely positioned
  // box escapes those below its containing block, a fixed one all of them). Memoised: every
  // text node of a scan asks about the same few ancestors.
  const clips = new Map();
  const clipOf = (el) => {
    if (!el || el.nodeType !== 1 || LAYOUT_ROOTS.has(el.tagName)) return FULL;
    if (clips.has(el)) return clips.get(el);
    const st = getComputedStyle(el);
    let outer = FULL;
    if (st.position !== 'fixed') {
      let p = parentOf(el);
      if (st.position === 'absolute') {
        while (p && p.nodeType === 1 && !LAYOUT_ROOTS.has(p.tagName) &&
          getComputedStyle(p).position === 'static' && getComputedStyle(p).transform === 'none') p = parentOf(p);
      }
      outer = clipOf(p);
    }
    let own = outer;
    const b = el.getBoundingClientRect();
    if (st.overflowX !== 'visible' || st.overflowY !== 'visible') own = cut(own, b);
    if (st.clip && st.clip !== 'auto' && /absolute|fixed/.test(st.position)) {
      const n = (st.clip.match(/-?[\d.]+px/g) || []).map(parseFloat);  // top right bottom left
      own = n.length === 4
        ? cut(own, { left: b.left + n[3], top: b.top + n[0], right: b.left + n[1], bottom: b.top + n[2] })
        : own;
    }
    if (/^inset\(\s*(50%|100%)/.test(st.clipPath || '')) own = cut(own, { left: 0, top: 0, right: 0, bottom: 0 });
    clips.set(el, own);
    return own;
  };
  // Something that paints over what lies under it: an image, a control, a canvas, a frame,
  // or a box with a background, a background image or a border.
  const PAINTED = new Set(['IMG', 'VIDEO', 'CANVAS', 'IFRAME', 'EMBED', 'OBJECT', 'INPUT',
    'SELECT', 'TEXTAREA', 'BUTTON', 'SVG']);
  const paintsOver = (n) => {
    if (!visible(n)) return false;  // transparent or hidden: whatever is under it shows
    if (PAINTED.has(n.tagName.toUpperCase())) return true;
    const st = getComputedStyle(n);
    return !transparent(st.backgroundColor) || st.backgroundImage !== 'none' ||
      (parseFloat(st.borderTopWidth) > 0 && !transparent(st.borderTopColor));
  };
  const covered = (host, r) => {
    // elementsFromPoint skips `pointer-events: none` boxes (a floating label over its field):
    // for such text the paint order cannot be read, and the text counts as drawn
    if (getComputedStyle(host).pointerEvents === 'none') return false;
    const root = host.getRootNode();
    const at = (root.elementsFromPoint ? root : host.ownerDocument)
      .elementsFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
    for (const n of at) {
      if (within(n, host)) return false;  // its own box or one it lies on: nothing above it
      // else a box painted above the text; a child of its box too (a card's back over its value)
      if (paintsOver(n)) return true;
    }
    return false;
  };
  const inkless = (st) => transparent(st.color) && transparent(st.webkitTextFillColor);
  const gradientText = (host) => {  // `color: transparent` over a background clipped to text
    for (let n = host, i = 0; n && n.nodeType === 1 && i < 3; n = n.parentElement, i += 1) {
      const st = getComputedStyle(n);
      if ((st.backgroundClip === 'text' || st.webkitBackgroundClip === 'text') &&
        st.backgroundImage !== 'none') return true;
    }
    return false;
  };
  // The largest part of a text node the screen draws (viewport coordinates of its document),
  // or null when none of it is drawn. Memoised: a scan asks about most text nodes twice or
  // more (an element's name, its row's text, a field's label), and each answer takes a hit
  // test (1.7-2 asks per text node on the bundled sites).
  const drawnBoxes = new Map();
  const drawnRect = (t) => {
    if (!drawnBoxes.has(t)) drawnBoxes.set(t, drawnRectOf(t));
    return drawnBoxes.get(t);
  };
  const drawnRectOf = (t) => {
    const host = t.parentElement;
    if (!host || UNRENDERED.has(host.tagName) || !visible(host)) return null;
    const st = getComputedStyle(host);
    if (parseFloat(st.fontSize) < 1 || (inkless(st) && !gradientText(host))) return null;
    const win = host.ownerDocument.defaultView || window;
    const view = { left: 0, top: 0, right: win.innerWidth, bottom: win.innerHeight };
    const range = host.ownerDocument.createRange();
    range.selectNodeContents(t);
    const box = cut(clipOf(host), view);
    let best = null, area = 0;
    for (const line of range.getClientRects()) {
      const r = cut(line, box);
      const w = r.right - r.left, h = r.bottom - r.top;
      if (w >= 2 && h >= 2 && w * h > area) { best = r; area = w * h; }
    }
    if (!best || covered(host, best)) return null;
    return { ...best, width: best.right - best.left, height: best.bottom - best.top };
  };
  const BLOCKY = /^(block|flex|grid|table|list-item|table-cell|table-row|flow-root)/;
  // The drawn text of `node` without `skip`'s subtree: `full` (its innerText, as elements.js
  // reads it) when every word of it is drawn, else only the drawn text nodes' words.
  const drawnText = (node, skip, full) => {
    if (!full) return '';
    let out = '', all = true, last = null;
    const walker = (node.ownerDocument || document).createTreeWalker(node, NodeFilter.SHOW_TEXT);
    for (let t = walker.nextNode(); t; t = walker.nextNode()) {
      if (skip && within(skip, t)) continue;
      const host = t.parentElement;
      if (!t.textContent.trim() || !host || UNRENDERED.has(host.tagName)) continue;
      if (!drawnRect(t)) { all = false; continue; }
      if (last && last !== host && (BLOCKY.test(getComputedStyle(host).display) ||
        BLOCKY.test(getComputedStyle(last).display))) out += ' ';
      out += t.textContent;
      last = host;
    }
    return all ? full : clean(out);
  };
  // A pseudo-element's glyph is drawn when it has a size and a colour.
  const pseudoDrawn = (st) => parseFloat(st.fontSize) >= 1 && !inkless(st);
  return { drawnRect, drawnText, pseudoDrawn, transparent, clipOf, cut };
}
