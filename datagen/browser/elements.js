// Visible interactive elements of the viewport, in one round trip (asking Playwright for
// boxes one element at a time costs ~8 ms each). Boxes are CSS px, clipped to the viewport.
// `hit`: elementFromPoint at the box centre lands on the element (or inside it, or on one of
// its labels), i.e. a click there reaches it: occluded elements are not hit.
// Also returns the scroll offset, which the screenshot clip needs (CDP clips are in document px).
({ maxElements, asJson }) => {
  const SELECTOR = [
    'a[href]', 'button', 'input:not([type=hidden])', 'select', 'textarea', 'summary',
    '[role=button]', '[role=link]', '[role=tab]', '[role=checkbox]', '[role=switch]',
    '[role=menuitem]', '[role=option]', '[role=radio]', '[role=combobox]', '[role=textbox]',
    '[role=searchbox]', '[role=slider]', '[onclick]', '[tabindex]:not([tabindex="-1"])',
    '[contenteditable=""]', '[contenteditable=true]',
  ].join(',');
  const vw = window.innerWidth, vh = window.innerHeight;
  const clean = (s, n) => (s || '').replace(/\s+/g, ' ').trim().slice(0, n || 200);
  const INPUT_ROLES = {
    button: 'button', submit: 'button', reset: 'button', image: 'button', checkbox: 'checkbox',
    radio: 'radio', range: 'slider', search: 'searchbox', email: 'textbox', tel: 'textbox',
    url: 'textbox', text: 'textbox', password: 'textbox', number: 'spinbutton', date: 'textbox',
  };
  const roleOf = (el) => {
    const explicit = el.getAttribute('role');
    if (explicit) return explicit.split(' ')[0];
    const tag = el.tagName.toLowerCase();
    if (tag === 'a') return 'link';
    if (tag === 'button' || tag === 'summary') return 'button';
    if (tag === 'select') return el.multiple ? 'listbox' : 'combobox';
    if (tag === 'textarea') return 'textbox';
    if (tag === 'input') return INPUT_ROLES[(el.type || 'text').toLowerCase()] || 'textbox';
    if (el.isContentEditable) return 'textbox';
    return 'generic';
  };
  const nameOf = (el) => {
    const aria = el.getAttribute('aria-label');
    if (aria && aria.trim()) return clean(aria);
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const t = by.split(/\s+/).map((id) => document.getElementById(id))
        .filter(Boolean).map((n) => n.innerText || n.textContent).join(' ');
      if (clean(t)) return clean(t);
    }
    if (el.labels && el.labels.length) {
      const t = [...el.labels].map((l) => l.innerText || l.textContent).join(' ');
      if (clean(t)) return clean(t);
    }
    const tag = el.tagName.toLowerCase();
    if (tag === 'input' && ['button', 'submit', 'reset'].includes(el.type)) return clean(el.value);
    if (tag === 'img' || el.getAttribute('alt')) return clean(el.getAttribute('alt'));
    if (!['input', 'textarea', 'select'].includes(tag)) {
      const t = clean(el.innerText || el.textContent);
      if (t) return t;
    }
    return clean(el.getAttribute('title') || el.getAttribute('placeholder'));
  };
  const selectorOf = (el) => {
    const parts = [];
    let node = el;
    while (node && node.nodeType === 1 && node !== document.documentElement) {
      if (node.id && document.querySelectorAll('#' + CSS.escape(node.id)).length === 1) {
        parts.unshift('#' + CSS.escape(node.id));
        break;
      }
      let nth = 1;
      for (let s = node.previousElementSibling; s; s = s.previousElementSibling) {
        if (s.tagName === node.tagName) nth += 1;
      }
      parts.unshift(node.tagName.toLowerCase() + ':nth-of-type(' + nth + ')');
      node = node.parentElement;
    }
    return parts.join(' > ');
  };
  const out = [];
  for (const el of document.querySelectorAll(SELECTOR)) {
    if (out.length >= maxElements) break;
    if (el.disabled) continue;
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) continue;
    if (r.right <= 0 || r.bottom <= 0 || r.left >= vw || r.top >= vh) continue;
    const st = getComputedStyle(el);
    if (st.visibility === 'hidden' || st.display === 'none' || parseFloat(st.opacity) === 0) continue;
    const x1 = Math.max(0, r.left), y1 = Math.max(0, r.top);
    const x2 = Math.min(vw, r.right), y2 = Math.min(vh, r.bottom);
    const at = document.elementFromPoint((x1 + x2) / 2, (y1 + y2) / 2);
    const hit = !!at && (at === el || el.contains(at) ||
      (!!el.labels && [...el.labels].some((l) => l.contains(at))));
    const tag = el.tagName.toLowerCase();
    const role = roleOf(el);
    const checkable = role === 'checkbox' || role === 'radio' || role === 'switch';
    out.push({
      index: out.length,
      tag,
      role,
      name: nameOf(el),
      text: clean(String(el.innerText || el.value || ''), 120),
      placeholder: clean(el.getAttribute('placeholder')),
      input_type: tag === 'input' ? (el.type || 'text') : '',
      selector: selectorOf(el),
      box: { x: x1, y: y1, width: x2 - x1, height: y2 - y1 },
      hit,
      editable: ['textbox', 'searchbox', 'spinbutton'].includes(role) || el.isContentEditable,
      checked: checkable
        ? (el.checked !== undefined ? !!el.checked : el.getAttribute('aria-checked') === 'true')
        : null,
    });
  }
  // As one JSON string: Playwright validates every nested value of an object result in Python
  // (~5 ms a step for a few hundred elements); a string is one value, parsed in Rust by pydantic.
  // The page's own JSON (a toJSON override, a replaced stringify) can spoil the string: then the
  // caller asks again for the object.
  const result = { scrollX: window.scrollX, scrollY: window.scrollY, elements: out };
  return asJson ? JSON.stringify(result) : result;
}
