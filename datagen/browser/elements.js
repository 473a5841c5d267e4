// The elements a user can click or type into, as they appear in the viewport, in one round trip
// (asking Playwright for boxes one element at a time costs ~8 ms each). Boxes are CSS px of the
// top-level viewport, clipped to it.
//
// What counts: native controls, ARIA widgets, [onclick]/tabindex/contenteditable, elements that
// got a click listener through addEventListener (page_init.js records them), the outermost
// element of a `cursor: pointer` region, SVG shapes with listeners; inside open shadow roots
// (recursively) and same-origin iframes (boxes offset into the top page). A native checkbox or
// radio that is drawn invisible (opacity 0, clipped, display: none) under a styled label is
// grounded as its visible label, which is what a user sees and clicks; an input hidden only by
// its opacity with no visible label (TodoMVC's toggle beside a `for`-less <label>) is grounded
// with its own box when a click at its centre reaches it. Names: see `nameOf` (issue 24).
// `hit`: a click at the box centre reaches the element (the deepest element at that point, through
// shadow roots and frames, is it, inside it, or one of its labels). A link wrapped onto two lines
// is boxed by the line whose centre is hit, not by the union, whose centre falls between lines.
// The elements are kept (under a Symbol key) so that stability.js can re-measure their boxes after
// the screenshot.
({ maxElements, asJson }) => {
  const KEY = Symbol.for('datagen.page');
  const SCAN = Symbol.for('datagen.scan');
  const NATIVE = [
    'a[href]', 'button', 'input:not([type=hidden])', 'select', 'textarea', 'summary',
    '[contenteditable=""]', '[contenteditable=true]', '[contenteditable=plaintext-only]',
  ].join(',');
  const ARIA = [
    'button', 'link', 'tab', 'checkbox', 'switch', 'menuitem', 'menuitemcheckbox',
    'menuitemradio', 'option', 'radio', 'combobox', 'textbox', 'searchbox', 'slider',
    'spinbutton', 'treeitem',
  ];
  const EXTRA = ARIA.map((r) => `[role=${r}]`).concat(['[onclick]', '[tabindex]:not([tabindex="-1"])']).join(',');
  const HEADINGS = 'h1,h2,h3,h4,h5,h6,[role=heading],legend,caption';
  const FIELD_TAGS = new Set(['input', 'textarea', 'select']);
  const TOGGLES = new Set(['checkbox', 'radio']);
  const INPUT_ROLES = {
    button: 'button', submit: 'button', reset: 'button', image: 'button', file: 'button',
    checkbox: 'checkbox', radio: 'radio', range: 'slider', search: 'searchbox', email: 'textbox',
    tel: 'textbox', url: 'textbox', text: 'textbox', password: 'textbox', number: 'spinbutton',
    date: 'textbox', color: 'button',
  };
  const top = window;
  const vw = top.innerWidth, vh = top.innerHeight;
  const clean = (s, n) => (s || '').replace(/\s+/g, ' ').trim().slice(0, n || 200);
  const parentOf = (n) => n.parentElement || (n.parentNode && n.parentNode.host) || null;
  const within = (el, at) => {  // `at` is `el` or inside it, through shadow roots
    for (let n = at; n; n = n.assignedSlot || n.parentNode || n.host) if (n === el) return true;
    return false;
  };
  const visible = (el) => {
    if (el.checkVisibility) {
      return el.checkVisibility({ opacityProperty: true, visibilityProperty: true });
    }
    const st = getComputedStyle(el);
    return st.visibility !== 'hidden' && st.display !== 'none' && parseFloat(st.opacity) !== 0;
  };

  // --- names -------------------------------------------------------------------------------
  // In this order: the accessible name (aria-labelledby, aria-label, for/wrapping labels, a
  // button's value, an image's alt, the element's own text); for a field or toggle, the label a
  // user reads beside it in its own control row; then the icon (an SVG <title> or aria-label
  // inside, a CSS pseudo-element's glyph, an icon font's class, an image's file name). Text
  // from outside the element's row (a paragraph of instructions, another section's heading, a
  // slider's value two rows up) never names it.
  const textOf = (node, skip) => {  // visible text of `node`, without `skip`'s subtree
    if (!skip || !node.contains(skip)) return clean(node.innerText || node.textContent);
    let out = '';
    const walk = (n) => {
      if (n === skip) return;
      if (n.nodeType === 3) out += n.textContent + ' ';
      else for (const c of n.childNodes) walk(c);
    };
    walk(node);
    return clean(out);
  };
  const graphicName = (el) => {  // an icon's own words: img alt, svg <title>, aria-label inside
    for (const g of el.querySelectorAll('img[alt], svg, [aria-label]')) {
      const t = g.tagName.toLowerCase() === 'img' ? g.getAttribute('alt')
        : g.getAttribute('aria-label') || (g.querySelector('title') || {}).textContent;
      if (clean(t)) return clean(t);
    }
    return '';
  };
  // A glyph drawn by a CSS pseudo-element (`.delete::after { content: '×' }`) of the element or
  // an icon inside it. Private-use code points (icon fonts) and text without a letter, digit or
  // symbol are no name.
  const PRIVATE = /[\uE000-\uF8FF]|[\uDB80-\uDBFF][\uDC00-\uDFFF]/;
  const PRIVATES = new RegExp(PRIVATE.source, 'g');
  const pseudoText = (n) => {
    let out = '';
    for (const which of ['::before', '::after']) {
      const st = getComputedStyle(n, which);
      if (st.display === 'none' || st.visibility === 'hidden' || parseFloat(st.opacity) === 0 ||
        !pseudoDrawn(st)) continue;
      const m = (st.content || '').match(/^"((?:[^"\\]|\\.)*)"$/);
      if (m) out += m[1].replace(/\\(.)/g, '$1');
    }
    out = clean(out);
    return out && !PRIVATE.test(out) && /[\p{L}\p{N}\p{S}\p{P}]/u.test(out) ? out : '';
  };
  const glyphOf = (el) => {
    const own = pseudoText(el);
    if (own) return own;
    const inner = el.querySelectorAll('*');
    for (let i = 0; i < inner.length && i < 12; i += 1) {
      const t = pseudoText(inner[i]);
      if (t) return t;
    }
    return '';
  };
  // The icon's word from how it is drawn: an image's or background image's file name
  // (`trash.svg`), which usually says what it shows. Never an icon font's class or an SVG
  // sprite's symbol id (issue 34: class names and ids name nothing). Size and style modifiers
  // are not words.
  const MODIFIERS = new Set(['fw', 'lg', 'sm', 'xs', 'xl', 'md', 'solid', 'regular', 'light',
    'thin', 'outline', 'outlined', 'filled', 'fill', 'round', 'rounded', 'sharp', 'duotone',
    'icon', 'icons', 'btn', 'button', 'small', 'large', 'inverse', 'spin', 'pulse', 'border',
    'white', 'black', 'primary', 'secondary', 'svg', 'img', 'image', 'png', 'gif', 'webp']);
  const iconWords = (raw) => {
    const words = raw.toLowerCase().replace(/\.[a-z0-9]+$/, '').split(/[^a-z]+/)
      .filter((w) => w.length > 1 && !MODIFIERS.has(w) && !/^(fa|fas|far|fab|bi|ti|mdi|ion|glyphicon|material|symbols|lucide|feather|ri|la|las|lab|bx|bxs|ic|svg|sprite)$/.test(w));
    const out = words.slice(0, 3).join(' ');
    return out.length >= 3 && out.length <= 24 ? out : '';
  };
  const iconOf = (el) => {
    const nodes = [el, ...el.querySelectorAll('i, span, svg, img')].slice(0, 12);
    for (const n of nodes) {
      const src = n.tagName.toLowerCase() === 'img' ? n.getAttribute('src') || '' : '';
      const bg = (getComputedStyle(n).backgroundImage || '').match(/url\("?([^")]*)"?\)/);
      for (const url of [src, bg ? bg[1] : '']) {
        if (!url || url.startsWith('data:')) continue;
        const file = decodeURIComponent(url.split(/[?#]/)[0].split('/').pop() || '');
        if (/[0-9a-f]{8,}/i.test(file)) continue;  // a content hash, not a word
        const w = iconWords(file);
        if (w) return w;
      }
    }
    return '';
  };
  // Does the element draw a graphic (an SVG, an image, an icon element, a background image)?
  // An unnamed one is then an icon button, not a blank one.
  const drawsGraphic = (el) => !!el.querySelector('svg, img, i, [class*=icon]') ||
    (getComputedStyle(el).backgroundImage || 'none') !== 'none';
  const UNRENDERED = new Set(['SCRIPT', 'STYLE', 'TEMPLATE', 'NOSCRIPT', 'HEAD', 'TITLE']);
  // Only drawn text names or places anything (issue 44): drawn.js.
  const { drawnRect, drawnText, pseudoDrawn } = (/*@include drawn.js*/)(
    { clean, parentOf, within, visible, UNRENDERED });
  const ownText = (el) => drawnText(el, null, clean(el.innerText || el.textContent));
  const CONTROLS = NATIVE + ',' + ARIA.map((r) => `[role=${r}]`).join(',');
  // Text a person reads as a label: short, one phrase (not a sentence of instructions).
  const LABEL_CHARS = 48, LABEL_WORDS = 7;
  const labelLike = (t) => !!t && t.length <= LABEL_CHARS && t.split(' ').length <= LABEL_WORDS &&
    !/[.!?]\s+\S/.test(t) && /\p{L}/u.test(t) && !(/[.!]$/.test(t) && t.split(' ').length >= 3);
  // Text an unnamed control may be placed by (`the empty text field below "Focus into the
  // textbox."`): any short visible text, an instruction included, since it names nothing.
  const ANCHOR_CHARS = 80;
  const anchorLike = (t) => !!t && t.length <= ANCHOR_CHARS && /\p{L}/u.test(t);
  // The drawn text nearest an unnamed control, and the groups of like controls (groups.js).
  const { nearestText, group, boxOf } = (/*@include groups.js*/)(
    { clean, parentOf, within, drawnRect, anchorLike });
  const nearOf = (el) => (el.ownerDocument === document ? nearestText(boxOf(el), el) : null);
  // The label-like text in the element's own control row: on its line (left or right of it)
  // or, for a field, just above its left edge. Looked for in the nearest ancestors that are
  // still one row high (at most three times the element's height): that is the bound on
  // distance; text inside another control, a heading, a label of another control, or an
  // <output> is not the element's. When `naming`, text past another control on the line is
  // that control's, not this one's.
  const ROW_GAP = vw * 0.9, ABOVE_GAP = 28;
  // `loose` (an anchor for a control with no name): any short text, in ancestors up to 160 px
  // taller than the element.
  const rowText = (el, prefer, naming, loose) => {
    const b = el.getBoundingClientRect();
    if (b.width < 1 || b.height < 1) return null;
    const limit = loose ? b.height + 160 : Math.max(b.height * 3, b.height + 48);
    for (let a = parentOf(el), depth = 0; a && depth < (loose ? 6 : 4); a = parentOf(a), depth += 1) {
      if (a.nodeType !== 1 || a.tagName === 'BODY' || a.tagName === 'HTML') break;
      if (a.getBoundingClientRect().height > limit) break;
      // another control between the element and a text on its line: the text is that one's
      const others = [...a.querySelectorAll(CONTROLS)]
        .filter((o) => o !== el && !o.contains(el) && !el.contains(o))
        .map((o) => o.getBoundingClientRect()).filter((o) => o.width > 0 && o.height > 0);
      const between = (r) => others.some((o) => o.bottom > b.top && o.top < b.bottom &&
        o.bottom > r.top && o.top < r.bottom &&
        ((o.left >= b.right - 1 && o.right <= r.left + 1) || (o.right <= b.left + 1 && o.left >= r.right - 1)));
      const found = [];
      const walker = (a.ownerDocument || document).createTreeWalker(a, NodeFilter.SHOW_TEXT);
      for (let t = walker.nextNode(); t && found.length < 40; t = walker.nextNode()) {
        const host = t.parentElement;
        if (!host || within(el, t) || UNRENDERED.has(host.tagName)) continue;
        const other = host.closest(CONTROLS + ',' + HEADINGS + ',output,[role=status]');
        if (other && !other.contains(el)) continue;
        const lab = host.closest('label');
        if (lab && lab.control && lab.control !== el) continue;
        const words = clean(t.textContent);
        if (!words) continue;
        const unit = lab && !lab.control ? lab : host;  // a sibling <label>: all of its words
        const text = clean(unit.contains(el) || unit === host ? words
          : drawnText(unit, null, clean(unit.innerText || words))).replace(/[:*]+$/, '').trim();
        if (!(loose ? anchorLike(text) : labelLike(text))) continue;
        const r = drawnRect(t);  // only text the screen shows places or names anything
        if (!r) continue;
        const overlap = Math.min(b.bottom, r.bottom) - Math.max(b.top, r.top);
        let side = '', gap = 0;
        if (overlap >= 0.5 * Math.min(b.height, r.height)) {
          if (r.left >= b.right - 2) { side = 'right'; gap = r.left - b.right; }
          else if (r.right <= b.left + 2) { side = 'left'; gap = b.left - r.right; }
        } else if (prefer.includes('above') && r.bottom <= b.top + 2 && b.top - r.bottom <= ABOVE_GAP &&
          r.left >= b.left - 16 && r.left <= b.left + Math.min(b.width / 2, 120)) {
          side = 'above'; gap = b.top - r.bottom;
        } else if (prefer.includes('below') && r.top >= b.bottom - 2 && r.top - b.bottom <= ABOVE_GAP &&
          r.left >= b.left - 16 && r.left <= b.left + Math.min(b.width / 2, 120)) {
          side = 'below'; gap = r.top - b.bottom;  // drawn below it (whatever the DOM order)
        }
        if (!side || gap > ROW_GAP || (naming && side !== 'above' && between(r))) continue;
        found.push({ text, side, gap, label: !!lab && !lab.control });
      }
      if (found.length) {
        const rank = (f) => (prefer.indexOf(f.side) < 0 ? 9 : prefer.indexOf(f.side)) * 1000 + f.gap;
        return found.sort((x, y) => rank(x) - rank(y))[0];
      }
    }
    return null;
  };
  // An unnamed SVG shape is told by its colour (what the screenshot shows of it).
  const colourOf = (el) => {
    const m = (getComputedStyle(el).fill || '').match(/rgba?\((\d+),\s*(\d+),\s*(\d+)/);
    if (!m) return '';
    const [r, g, b] = [m[1], m[2], m[3]].map((v) => Number(v) / 255);
    const max = Math.max(r, g, b), min = Math.min(r, g, b), l = (max + min) / 2;
    const sat = max === min ? 0 : (max - min) / (1 - Math.abs(2 * l - 1));
    if (sat < 0.2) return l < 0.2 ? 'black' : l > 0.85 ? 'white' : 'grey';
    let h = max === r ? ((g - b) / (max - min)) % 6 : max === g ? (b - r) / (max - min) + 2
      : (r - g) / (max - min) + 4;
    h = (h * 60 + 360) % 360;
    const hues = [[15, 'red'], [45, 'orange'], [70, 'yellow'], [160, 'green'], [195, 'teal'],
      [255, 'blue'], [290, 'purple'], [335, 'pink'], [360, 'red']];
    return hues.find(([edge]) => h < edge)[1];
  };
  const labelledText = (el, shownOnly) => {  // the text aria-labelledby points at
    const by = el.getAttribute('aria-labelledby');
    if (!by) return '';
    const root = el.getRootNode();
    return clean(by.split(/\s+/).map((id) => root.getElementById ? root.getElementById(id)
      : document.getElementById(id)).filter((n) => n && (!shownOnly || visible(n)))
      .map((n) => (shownOnly ? drawnText(n, null, textOf(n)) : textOf(n))).join(' '));
  };
  // The accessible name as assistive technology computes it (roughly), shown or not: kept in
  // its own column (`accessible_name`) for trainers who want it; expressions use `nameOf`.
  const accessibleName = (el, tag, field) => {
    const by = labelledText(el, false);
    if (by) return by;
    if (clean(el.getAttribute('aria-label'))) return clean(el.getAttribute('aria-label'));
    const fromLabels = clean([...(el.labels || [])].map((l) => textOf(l, el)).join(' '));
    if (fromLabels) return fromLabels;
    if (tag === 'input' && ['button', 'submit', 'reset'].includes(el.type)) return clean(el.value);
    if ((tag === 'img' || (tag === 'input' && el.type === 'image')) && clean(el.alt)) return clean(el.alt);
    const own = field ? '' : clean(el.innerText || el.textContent);
    if (own) return own;
    if (!field) {
      const g = graphicName(el);
      if (g) return g;
    }
    return clean(el.getAttribute('title')) || (field ? clean(el.getAttribute('placeholder')) : '');
  };
  // [name, source, text beside it ({text, side}) or null]. The name is what a person sees the
  // element called (issue 34): text aria-labelledby points at while it is shown, a shown
  // <label>, a button's own text or value; for a field or toggle the label a user reads
  // beside it in its row; for an icon-only control (no text of its own) its aria-label, alt,
  // SVG <title> or title may stand in for the icon (it usually says what the icon shows), then
  // a drawn glyph or an image's file name. Never an aria-label over text the control shows,
  // the HTML `name` attribute, an id or a class name. A control with none of these has no
  // name: source `graphic` when it draws one, and the text around it to place it by.
  const nameOf = (el, tag, role, label) => {
    const field = FIELD_TAGS.has(tag) || ['textbox', 'searchbox', 'combobox', 'spinbutton'].includes(role);
    const toggle = TOGGLES.has(role) || role === 'switch' || (tag === 'input' && TOGGLES.has(el.type));
    const by = labelledText(el, true);
    if (by) return [by, 'labelledby', null];
    const labels = label ? [label] : [...(el.labels || [])].filter((l) => visible(l));
    const fromLabels = clean(labels.map((l) => drawnText(l, el, textOf(l, el))).join(' '));
    if (fromLabels) return [fromLabels, 'label', null];
    if (tag === 'input' && ['button', 'submit', 'reset'].includes(el.type) && clean(el.value) &&
      pseudoDrawn(getComputedStyle(el))) {
      return [clean(el.value), 'content', null];
    }
    const own = FIELD_TAGS.has(tag) ? ''
      : clean(drawnText(el, null, clean(el.innerText || '')).replace(PRIVATES, ''));
    const shows = /[\p{L}\p{N}]/u.test(own);
    if (toggle && !FIELD_TAGS.has(tag) && shows) return [own, 'content', null];  // ARIA toggle
    if (field || toggle) {
      // The label a user reads in the control's row: after a checkbox or radio, before (or
      // above) a field (where people put them).
      // A toggle's text on its left is its label only when it is a <label>; other text there
      // (a row's first cell, a settings row's caption) is where it is: `the checkbox right of
      // "Alice"`.
      const near = rowText(el, toggle ? ['right', 'left'] : ['left', 'above'], true);
      if (near && toggle && near.side === 'left' && !near.label) return ['', '', near];
      if (near) return [near.text, near.label ? 'sibling-label' : 'nearby', null];
      // else any short text around it in its row (a caption drawn below a field included),
      // else the drawn text nearest it on whichever side it is drawn (issue 44): a reader
      // finds `the empty text field above "Caption"` where the caption is drawn under it
      const around = rowText(el, toggle ? ['right', 'left', 'above', 'below']
        : ['left', 'above', 'right', 'below'], false, true) || nearOf(el);
      return ['', '', around];
    }
    if (el instanceof SVGElement) {
      // its drawn text (a <title> or <desc> is a tooltip, not drawn); an aria-label, <title>
      // or title only as an icon's word (up to three plain words: `Zoom in`, not a chart
      // bar's `Jan: $120k`), else its colour
      let drawn = '';
      const walkText = (n) => {
        if (n.nodeType === 3) drawn += n.textContent.trim() && drawnRect(n) ? n.textContent + ' ' : '';
        else if (!['title', 'desc'].includes((n.tagName || '').toLowerCase())) n.childNodes.forEach(walkText);
      };
      walkText(el);
      if (clean(drawn)) return [clean(drawn), 'content', null];
      const t = el.querySelector('title');
      const iconish = (w) => /^[\p{L} ]+$/u.test(w) && w.split(' ').length <= 3;
      for (const [w, source] of [[clean(el.getAttribute('aria-label')), 'aria-label'],
        [t ? clean(t.textContent) : '', 'alt'], [clean(el.getAttribute('title')), 'title']]) {
        if (w && iconish(w)) return [w, source, null];
      }
      const colour = colourOf(el);
      if (colour) return [colour, 'appearance', null];
      return ['', '', null];
    }
    if (shows) return [own, 'content', null];
    // An icon-only control is told apart by the row text beside it too: `the "×" button
    // right of "Buy milk"`, or where it has no icon word, `the button right of "Buy milk"`.
    // A glyph drawn as text (`×`, `_`, `☰`) is an icon: its aria-label may say what it shows.
    const near = rowText(el, ['left', 'right']);
    const aria = clean(el.getAttribute('aria-label'));
    if (aria) return [aria, 'aria-label', near];
    if (own) return [own, 'content', near];  // a glyph in the text (`×`, `+`, `☰`)
    if ((tag === 'img' || (tag === 'input' && el.type === 'image')) && clean(el.alt)) {
      return [clean(el.alt), 'alt', near];
    }
    const g = graphicName(el);
    if (g) return [g, 'alt', near];
    if (clean(el.getAttribute('title'))) return [clean(el.getAttribute('title')), 'title', near];
    const glyph = glyphOf(el);
    if (glyph) return [glyph, 'glyph', near];
    const icon = iconOf(el);
    if (icon) return [icon, 'icon', near];
    // an element (an icon button, a clickable cell, a card) with nothing in its row: the
    // drawn text nearest it, on whichever side it is drawn
    const around = near || rowText(el, ['left', 'right', 'above'], false, true) || nearOf(el);
    return ['', drawsGraphic(el) ? 'graphic' : '', around];
  };
  const selectedText = (el) => {  // what a closed single <select> shows
    if (el.multiple || el.size > 1) return '';
    const o = el.options[el.selectedIndex];
    return o ? clean(o.label || o.text, 120) : '';
  };
  const roleOf = (el, tag) => {
    const explicit = el.getAttribute('role');
    if (explicit) return explicit.split(' ')[0];
    if (tag === 'a') return el.hasAttribute('href') ? 'link' : 'generic';
    if (tag === 'button' || tag === 'summary') return 'button';
    if (tag === 'select') return el.multiple ? 'listbox' : 'combobox';
    if (tag === 'textarea') return 'textbox';
    if (tag === 'input') return INPUT_ROLES[(el.type || 'text').toLowerCase()] || 'textbox';
    if (el.isContentEditable) return 'textbox';
    if (tag === 'img') return 'img';
    return 'generic';
  };

  // --- where things are ----------------------------------------------------------------------
  const deepAt = (doc, x, y) => {  // the deepest element at (x, y), through open shadow roots
    let at = doc.elementFromPoint(x, y);
    while (at && at.shadowRoot) {
      const inner = at.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === at) break;
      at = inner;
    }
    return at;
  };
  // frames: [{el: iframe, doc: its document, dx, dy: offset of its content in top CSS px}]
  const reaches = (el, frames, x, y, extra) => {  // does a click at top (x, y) reach `el`?
    let doc = top.document, dx = 0, dy = 0;
    for (const f of frames) {
      const at = deepAt(doc, x - dx, y - dy);
      if (at !== f.el) return false;
      doc = f.doc; dx = f.dx; dy = f.dy;
    }
    const at = deepAt(doc, x - dx, y - dy);
    if (!at) return false;
    if (within(el, at) || (extra && within(extra, at))) return true;
    if (el.labels && [...el.labels].some((l) => within(l, at))) return true;
    // slotted content: the hit lands on the host whose shadow tree holds `el` around a <slot>
    return !!(at.shadowRoot && at.shadowRoot.contains(el) && el.querySelector('slot'));
  };
  const clip = (r, dx, dy) => {
    const x1 = Math.max(0, r.left + dx), y1 = Math.max(0, r.top + dy);
    const x2 = Math.min(vw, r.right + dx), y2 = Math.min(vh, r.bottom + dy);
    return x2 - x1 >= 1 && y2 - y1 >= 1 ? { x: x1, y: y1, width: x2 - x1, height: y2 - y1 } : null;
  };
  // The box a click should aim at: the element's own box, or for an element wrapped onto
  // several lines its widest line box whose centre reaches it (the union would hold the text
  // around it too). null: nothing of it is in the viewport.
  const place = (el, frames, extra) => {
    const f = frames.length ? frames[frames.length - 1] : { dx: 0, dy: 0 };
    const own = clip(el.getBoundingClientRect(), f.dx, f.dy);
    if (!own) return null;
    const centre = (b) => [b.x + b.width / 2, b.y + b.height / 2];
    const rects = el.getClientRects();
    if (rects.length > 1) {
      const lines = [...rects].map((r, i) => [clip(r, f.dx, f.dy), i])
        .filter(([b]) => b && b.width >= 2 && b.height >= 2)
        .sort(([a], [b]) => b.width * b.height - a.width * a.height);
      for (const [b, i] of lines) {
        if (reaches(el, frames, ...centre(b), extra)) return { box: b, hit: true, rect: i };
      }
    }
    return { box: own, hit: reaches(el, frames, ...centre(own), extra), rect: -1 };
  };
  const selectorIn = (el) => {  // a CSS path within el's own document or shadow root
    const root = el.getRootNode();
    const parts = [];
    for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
      if (node === root.documentElement) break;
      if (node.id && root.querySelectorAll('#' + CSS.escape(node.id)).length === 1) {
        parts.unshift('#' + CSS.escape(node.id));
        break;
      }
      let nth = 1;
      for (let s = node.previousElementSibling; s; s = s.previousElementSibling) {
        if (s.tagName === node.tagName) nth += 1;
      }
      parts.unshift(CSS.escape(node.tagName.toLowerCase()) + ':nth-of-type(' + nth + ')');
    }
    return parts.join(' > ');
  };

  // --- the walk -----------------------------------------------------------------------------
  const candidates = [];  // {el, frames, path, how, proxyOf}
  const seenControls = new Set();
  // Which elements of a tree scope (a document or a shadow root) match the selectors, found
  // by one native query each instead of a `matches` per element (the walk's main cost).
  const scopeOf = (root) => ({
    native: new Set(root.querySelectorAll(NATIVE)), extra: new Set(root.querySelectorAll(EXTRA)),
  });
  const consider = (el, frames, path, win, pointerParent, scope) => {
    const tag = el.tagName.toLowerCase();
    const state = win[KEY];
    let how = '';
    if (scope.native.has(el)) how = 'native';
    else if (scope.extra.has(el)) how = 'aria';
    else if ((state && state.listeners.has(el)) || typeof el.onclick === 'function') how = 'listener';
    let pointer = false;
    if (how && how !== 'listener') {
      pointer = true;  // controls' insides inherit their cursor: not new targets
    } else if (pointerParent && !how) {
      pointer = true;  // inside a pointer region: not its outermost element (no style read)
    } else {
      pointer = win.getComputedStyle(el).cursor === 'pointer';
      if (!how && pointer && !pointerParent) how = 'pointer';
    }
    if (how === 'listener' && (tag === 'body' || tag === 'html')) how = '';
    if (tag === 'label' && el.control) how = '';  // the control is the target (or its proxy)
    if (how) candidates.push({ el, frames, path, how, win });
    return pointer;
  };
  const walk = (root, frames, path, win, pointerParent, scope) => {
    for (const el of root.children) {
      if (candidates.length > maxElements * 8) return;
      const pointer = consider(el, frames, path, win, pointerParent, scope);
      if (el.shadowRoot) {
        const inside = scopeOf(el.shadowRoot);
        walk(el.shadowRoot, frames, path + selectorIn(el) + ' >> ', win, pointer, inside);
      }
      if (el.tagName === 'IFRAME' || el.tagName === 'FRAME') {
        let doc = null;
        try { doc = el.contentDocument; } catch (e) { doc = null; }  // cross-origin: not ours
        if (doc && doc.documentElement) {
          const r = el.getBoundingClientRect();
          const f = frames.length ? frames[frames.length - 1] : { dx: 0, dy: 0 };
          const cs = getComputedStyle(el);
          const dx = f.dx + r.left + el.clientLeft + parseFloat(cs.paddingLeft);
          const dy = f.dy + r.top + el.clientTop + parseFloat(cs.paddingTop);
          const inner = [...frames, { el, doc, dx, dy }];
          const where = path + selectorIn(el) + ' >> internal:control=enter-frame >> ';
          walk(doc.documentElement, inner, where, doc.defaultView || win, false, scopeOf(doc));
        }
      }
      walk(el, frames, path, win, pointer, scope);
    }
  };
  walk(top.document, [], '', top, false, scopeOf(top.document));

  // A listener or pointer region that holds other targets is a container (a card, a delegated
  // list), not a target itself; one that covers most of the viewport (an app root, a backdrop)
  // is not a label anyone would use.
  const targets = new Set(candidates.map((c) => c.el));
  const chosen = candidates.filter((c) => {
    if (c.how !== 'listener' && c.how !== 'pointer') return true;
    for (const other of targets) if (other !== c.el && within(c.el, other)) return false;
    const r = c.el.getBoundingClientRect();
    return r.width * r.height < vw * vh / 4;
  });

  // An open <select> draws its option list as a native popup: in the screenshot, not in the DOM,
  // so hit tests see through it. Its box is estimated (generously) from Chromium's layout: rows
  // of ~1.85 × the font size, at most 20, below the select if they fit, else above.
  const popups = [];
  const popupOf = (el, dx, dy) => {
    const r = el.getBoundingClientRect();
    const font = parseFloat(getComputedStyle(el).fontSize) || 13;
    const rows = Math.min(20, Math.max(1, el.options.length));
    const height = rows * Math.max(24, font * 2) + 4;
    const longest = Math.max(0, ...[...el.options].map((o) => (o.text || '').length));
    const width = Math.max(r.width, longest * font * 0.65 + 36);
    const below = r.bottom + dy + height <= vh;
    const y1 = below ? r.bottom + dy : Math.max(0, r.top + dy - height);
    return { x1: r.left + dx, y1, x2: r.left + dx + width, y2: below ? y1 + height : r.top + dy };
  };
  // Elements that move by themselves: targets of running CSS animations or transitions of
  // geometry, and elements whose style a script keeps rewriting (page_init.js). Their boxes
  // and everything inside them cannot be trusted to match a screenshot, even if they are
  // still at the instant of the scan (a bounce's turning point).
  const GEOMETRY = /^(transform|translate|rotate|scale|left|top|right|bottom|inset|margin|offset|width|height|x|y|cx|cy)/i;
  const movers = new Set();
  const collectMovers = (doc, win) => {
    for (const a of doc.getAnimations ? doc.getAnimations() : []) {
      const target = a.effect && a.effect.target;
      if (a.playState !== 'running' || !target) continue;
      const props = a.transitionProperty ? [a.transitionProperty]
        : a.effect.getKeyframes().flatMap((k) => Object.keys(k));
      if (props.some((p) => GEOMETRY.test(p))) movers.add(target);
    }
    const state = win[KEY];
    return state ? state.restyled : null;
  };
  const restyledBy = new Map();  // document -> its restyle records
  const moving = (el, frames) => {
    const now = performance.now();
    for (let n = el; n; n = n.parentElement || (n.parentNode && n.parentNode.host)) {
      const doc = n.ownerDocument;
      if (!restyledBy.has(doc)) restyledBy.set(doc, collectMovers(doc, doc.defaultView || top));
      if (movers.has(n)) return true;
      const seen = restyledBy.get(doc) && restyledBy.get(doc).get(n);
      if (seen && seen.n >= 3 && now - seen.last < 500) return true;
    }
    return frames.some((f) => moving(f.el, []));
  };
  const out = [];
  const sources = [];  // the element each entry of `out` describes (for its context)
  const live = [];
  for (const c of chosen) {
    if (out.length >= maxElements) break;
    const el = c.el;
    if (el.disabled) continue;
    const tag = el.tagName.toLowerCase();
    let shown = el, label = null, own = null;
    if (!visible(el)) {
      // An invisible checkbox or radio drawn by its label: ground the label a user clicks.
      // Without a visible label, an input hidden only by its opacity (drawn by what lies under
      // it: a sibling label's circle, a styled button) that itself takes the click at its
      // centre is grounded with its own box, the click target.
      if (tag !== 'input') continue;
      label = TOGGLES.has(el.type) ? [...(el.labels || [])].find((l) => visible(l)) || null : null;
      if (label) {
        shown = label;
      } else {
        if (el.checkVisibility && !el.checkVisibility({ visibilityProperty: true })) continue;
        own = place(el, c.frames, null);
        if (!own || !own.hit || own.box.width < 4 || own.box.height < 4) continue;
      }
    } else if (tag === 'input' && TOGGLES.has(el.type)) {
      const r = el.getBoundingClientRect();
      const l = [...(el.labels || [])].find((x) => visible(x));
      if (l && (r.width < 4 || r.height < 4)) { label = l; shown = l; }  // clipped to a dot
    }
    if (seenControls.has(shown)) continue;
    seenControls.add(shown);
    const placed = own || place(shown, c.frames, shown === el ? null : el);
    if (!placed) continue;
    const role = roleOf(el, tag);
    const [name, source, near] = nameOf(el, tag, role, label);
    const isField = FIELD_TAGS.has(tag) || ['textbox', 'searchbox', 'combobox', 'spinbutton'].includes(role);
    const checkable = role === 'checkbox' || role === 'radio' || role === 'switch';
    const textual = tag === 'textarea' || (tag === 'input' && !TOGGLES.has(el.type) &&
      !['button', 'submit', 'reset', 'image', 'file', 'range', 'color'].includes(el.type));
    const frame = c.frames.length ? c.frames[c.frames.length - 1] : { dx: 0, dy: 0 };
    if (tag === 'select' && !el.multiple && el.size <= 1 && el.matches(':open')) {
      popups.push({ el, ...popupOf(el, frame.dx, frame.dy) });
    }
    const rectIndex = placed.rect;
    live.push(() => {  // the same box, measured again (stability.js)
      if (!shown.isConnected) return null;
      const rs = rectIndex >= 0 ? shown.getClientRects() : null;
      const r = rs && rs[rectIndex] ? rs[rectIndex] : shown.getBoundingClientRect();
      return clip(r, frame.dx, frame.dy);
    });
    sources.push(el);
    out.push({
      index: out.length,
      tag,
      role,
      name,
      name_source: source,
      accessible_name: accessibleName(el, tag, isField),
      // a field: what it holds; a drop-down: the option it shows
      text: textual ? clean(el.value, 120) : tag === 'select' ? selectedText(el)
        : (FIELD_TAGS.has(tag) ? '' : clean(ownText(el), 120)),  // as drawn
      placeholder: clean(el.getAttribute('placeholder')),
      // drawn now: a field holding text does not show its placeholder
      placeholder_shown: !!el.getAttribute('placeholder') && FIELD_TAGS.has(tag) &&
        el.matches(':placeholder-shown'),
      anchor: near ? near.text : '',
      anchor_side: near ? near.side : '',
      input_type: tag === 'input' ? (el.type || 'text') : '',
      selector: c.path + selectorIn(shown),
      box: placed.box,
      hit: placed.hit,
      editable: ['textbox', 'searchbox', 'spinbutton'].includes(role) || el.isContentEditable,
      checked: checkable
        ? (el.checked !== undefined ? !!el.checked : el.getAttribute('aria-checked') === 'true')
        : null,
      stable: !moving(shown, c.frames),
      href: tag === 'a' && el.href ? String(el.href.baseVal !== undefined
        ? new URL(el.href.baseVal, el.baseURI).href : el.href) : '',
      context: '',
    });
  }

  out.forEach((e, i) => {
    const b = e.box;
    if (popups.some((p) => p.el !== sources[i] && b.x < p.x2 && b.x + b.width > p.x1 &&
      b.y < p.y2 && b.y + b.height > p.y1)) e.hit = false;  // under the open list
  });

  // Groups of like controls around the ones with no words of their own (groups.js): a
  // clickable cell, a card, and controls with a role (a checkbox, an empty field, an icon
  // button) that show no name, text or placeholder.
  const wordless = (e) => !e.name && !e.text && !(e.placeholder && e.placeholder_shown) &&
    (e.name_source === '' || e.name_source === 'graphic');
  group(out.map((e, i) => ({ el: sources[i], e })), wordless);

  // Context (nearest heading, legend or labelled region) only where two elements would
  // otherwise read the same: it costs a search per ancestor.
  const keyOf = (e) => e.role + '|' + (e.name || e.text || e.placeholder).toLowerCase();
  const counts = new Map();
  for (const e of out) counts.set(keyOf(e), (counts.get(keyOf(e)) || 0) + 1);
  const contextOf = (el) => {
    for (let a = parentOf(el), depth = 0; a && depth < 12; a = parentOf(a), depth += 1) {
      if (a.nodeType !== 1) continue;
      const own = a.getAttribute('aria-label');
      if (own && /^(form|section|nav|aside|dialog|fieldset|article|header|footer)$/i.test(a.tagName)) {
        return clean(own, 80);
      }
      let best = null;
      for (const h of a.querySelectorAll(HEADINGS)) {
        if (h.contains(el)) continue;
        if (h.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) best = h;
      }
      const said = best ? clean(ownText(best), 80) : '';
      if (said) return said;  // a heading the screen does not show is no context
    }
    return '';
  };
  out.forEach((e, i) => {
    if (counts.get(keyOf(e)) > 1) e.context = contextOf(sources[i]);
  });

  const result = { scrollX: top.scrollX, scrollY: top.scrollY, elements: out };
  Object.defineProperty(top, SCAN, { value: live, configurable: true, enumerable: false });
  return asJson ? JSON.stringify(result) : result;
}
