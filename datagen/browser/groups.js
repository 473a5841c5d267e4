// Where an unnamed control is (issue 44), for elements.js, which includes this file where it
// marks the include (datagen/browser/observe.py puts it in). A reader finds an element with no
// words of its own by the drawn text nearest it (`the field above "Your nickname"`: the side is
// where the text is drawn, whatever the DOM order), or by its place in the group of like
// controls it belongs to (`the sixth of 9 cells in the grid below "Score"`).
({ clean, parentOf, within, drawnRect, anchorLike }) => {
  const NEAR_PX = 400;  // text farther than this from the box places nothing
  const CANDIDATES = 4000;  // text nodes indexed at most (a page's first ones, in DOM order)
  let index = null;  // [{t, r (its layout box), text}] of the top document, built once
  const textIndex = () => {
    if (index) return index;
    index = [];
    const walker = document.createTreeWalker(document.body || document.documentElement,
      NodeFilter.SHOW_TEXT);
    for (let t = walker.nextNode(); t && index.length < CANDIDATES; t = walker.nextNode()) {
      const text = clean(t.textContent).replace(/[:*]+$/, '').trim();
      if (!anchorLike(text) || !t.parentElement) continue;
      const range = document.createRange();
      range.selectNodeContents(t);
      const r = range.getBoundingClientRect();
      if (r.width >= 1 && r.height >= 1) index.push({ t, r, text });
    }
    return index;
  };
  // Where text box r lies from box b, and how far: above or below (overlapping it
  // horizontally), left or right (overlapping it vertically); '' when it overlaps the box.
  const sideOf = (b, r) => {
    const across = Math.min(b.right, r.right) - Math.max(b.left, r.left) > 0;
    const along = Math.min(b.bottom, r.bottom) - Math.max(b.top, r.top) > 0;
    if (across && r.bottom <= b.top + 2) return ['above', b.top - r.bottom];
    if (across && r.top >= b.bottom - 2) return ['below', r.top - b.bottom];
    if (along && r.right <= b.left + 2) return ['left', b.left - r.right];
    if (along && r.left >= b.right - 2) return ['right', r.left - b.right];
    return ['', Infinity];
  };
  // The drawn text nearest box `b` (top-document coordinates) on any side, outside `skip`
  // (an element or a list of them): {text, side, gap} or null. Only the top document's text
  // (a frame's own text is its own).
  const nearestText = (b, skip) => {
    const skips = !skip ? [] : Array.isArray(skip) ? skip : [skip];
    const found = [];
    for (const c of textIndex()) {
      if (skips.some((s) => within(s, c.t))) continue;
      const [side, gap] = sideOf(b, c.r);
      if (side && gap <= NEAR_PX) found.push({ c, side, gap });
    }
    found.sort((x, y) => x.gap - y.gap);
    for (const f of found.slice(0, 24)) {
      const r = drawnRect(f.c.t);
      if (!r) continue;
      const [side, gap] = sideOf(b, r);  // as drawn (clipped), the side it is seen on
      if (side) return { text: f.c.text, side, gap };
    }
    return null;
  };
  const boxOf = (n) => {
    const r = n.getBoundingClientRect();
    return { left: r.left, top: r.top, right: r.right, bottom: r.bottom };
  };
  const unionOf = (boxes) => ({  // of {x, y, width, height} boxes
    left: Math.min(...boxes.map((b) => b.x)), top: Math.min(...boxes.map((b) => b.y)),
    right: Math.max(...boxes.map((b) => b.x + b.width)),
    bottom: Math.max(...boxes.map((b) => b.y + b.height)),
  });
  const ROW_PX = 8;  // as annotate/grounding.py's reading order: tops this close are a line
  const readingOrder = (items) => {
    const rows = [];
    for (const it of [...items].sort((a, b) => a.box.y - b.box.y || a.box.x - b.box.x)) {
      if (rows.length && it.box.y - rows[rows.length - 1][0].box.y <= ROW_PX) rows[rows.length - 1].push(it);
      else rows.push([it]);
    }
    return { rows, order: rows.flatMap((row) => row.sort((a, b) => a.box.x - b.box.x)) };
  };
  // Groups of like controls (same tag and role, in the top document) around the unnamed ones:
  // the highest ancestor, at most four levels up, that holds two or more of them and no other
  // control. Every member of no role counts in the ordinal, named or not, as a reader counts
  // a grid's cells; controls with a role are like only when their noun is the same (all
  // wordless, drawing an icon or not: `the second of 3 icon buttons`, never counting a "Save"
  // button among icon buttons). `entries` [{el, e}] (e: the element's row); sets e.group_* on
  // the members.
  const group = (entries, unnamed) => {
    const said = (x) => (x.e.role === 'generic' ? '' : unnamed(x.e) ? 'wordless ' + x.e.name_source : 'named');
    const like = (a, b) => a.e.tag === b.e.tag && a.e.role === b.e.role && said(a) === said(b);
    const done = new Set();
    for (const u of entries) {
      if (!unnamed(u.e) || done.has(u) || u.e.selector.includes(' >> ')) continue;
      let best = null, members = null;
      for (let a = parentOf(u.el), depth = 0; a && a.nodeType === 1 && depth < 4; a = parentOf(a), depth += 1) {
        if (a.tagName === 'BODY' || a.tagName === 'HTML') break;
        const inside = entries.filter((x) => x.el !== a && within(a, x.el));
        if (inside.some((x) => !like(x, u))) break;
        if (inside.length >= 2 && (!members || inside.length > members.length)) { best = a; members = inside; }
      }
      if (!best) continue;
      const { rows, order } = readingOrder(members.map((m) => ({ m, box: m.e.box })));
      const cols = Math.max(...rows.map((r) => r.length));
      const list = /^(UL|OL)$/.test(best.tagName) || /^(list|listbox)$/.test(best.getAttribute('role') || '');
      const kind = rows.length >= 2 && cols >= 2 ? 'grid' : list ? 'list' : rows.length === 1 ? 'row' : 'column';
      // placed by the drawn text nearest the members' box (a toolbar's own title beside its
      // buttons included), outside the members themselves
      const near = nearestText(unionOf(members.map((m) => m.e.box)), members.map((m) => m.el));
      order.forEach(({ m }, i) => {
        done.add(m);
        Object.assign(m.e, {
          group_size: order.length, group_index: i + 1, group_kind: kind,
          group_anchor: near ? near.text : '', group_anchor_side: near ? near.side : '',
        });
      });
    }
  };
  return { nearestText, group, boxOf };
}
