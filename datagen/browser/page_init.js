// Installed in every frame of every episode before the page's own scripts run
// (context.add_init_script). It watches the page the way the element scan and the settle step
// need, without changing what the page sees:
// - which elements got a click-like listener through addEventListener (spans, divs and SVG
//   shapes that are clickable only that way carry no attribute that says so). The wrapper is a
//   Proxy of the native function, so the page's own checks (toString, name, length) see the
//   original; CDP's DOMDebugger.getEventListeners would tell the same, one round trip per node.
// - when the DOM last changed (a MutationObserver on the document), and which short timers
//   (setTimeout up to 1 s) are still to fire: apps that render after `load` from a timer (AMD
//   loaders, "data arrives" simulations, debounced renders) are not settled until they fire.
//   A poll stops counting: a function after its third run, and a timer set from a timer set
//   from a timer … (a chain of fresh closures) from the fourth link on.
// Both live under a Symbol.for key that no page code uses by accident.
(() => {
  const KEY = Symbol.for('datagen.page');
  if (window[KEY]) return;
  const CLICKY = new Set([
    'click', 'mousedown', 'mouseup', 'pointerdown', 'pointerup', 'touchstart', 'touchend',
    'dblclick', 'auxclick',
  ]);
  const state = { listeners: new WeakSet(), lastMutation: performance.now(), timers: new Set() };
  Object.defineProperty(window, KEY, { value: state, enumerable: false });
  const proto = EventTarget.prototype;
  const native = proto.addEventListener;
  proto.addEventListener = new Proxy(native, {
    apply(target, self, args) {
      try {
        if (CLICKY.has(String(args[0])) && self instanceof Element) state.listeners.add(self);
      } catch (e) { /* a hostile `this` must not break the page's call */ }
      return Reflect.apply(target, self, args);
    },
  });
  const SHORT_MS = 1000;
  const runs = new WeakMap();  // callback -> times it has run
  let depth = 0;  // how deep in a chain of timers the running callback is (0: not in one)
  const nativeSet = window.setTimeout, nativeClear = window.clearTimeout;
  state.sleep = (ms) => new Promise((resolve) => { nativeSet.call(window, resolve, ms); });
  // `promise` settled, or `ms` passed, whichever comes first; the timer is cleared when the
  // promise wins (a leftover timer would wake the page for nothing).
  state.within = (promise, ms) => new Promise((resolve) => {
    let id = 0;
    const done = () => { nativeClear.call(window, id); resolve(); };
    id = nativeSet.call(window, done, ms);
    Promise.prototype.then.call(promise, done, done);
  });
  window.setTimeout = new Proxy(nativeSet, {
    apply(target, self, args) {
      const [callback, delay] = args;
      if (typeof callback !== 'function' || !(Number(delay || 0) <= SHORT_MS)
        || (runs.get(callback) || 0) >= 3 || depth >= 3) {
        return Reflect.apply(target, self, args);
      }
      let id = 0;
      const link = depth + 1;
      const wrapped = function (...rest) {
        state.timers.delete(id);
        runs.set(callback, (runs.get(callback) || 0) + 1);
        const outer = depth;
        depth = link;
        try { return callback.apply(this, rest); } finally { depth = outer; }
      };
      id = Reflect.apply(target, self, [wrapped, ...args.slice(1)]);
      state.timers.add(id);
      return id;
    },
  });
  window.clearTimeout = new Proxy(nativeClear, {
    apply(target, self, args) {
      state.timers.delete(args[0]);
      return Reflect.apply(target, self, args);
    },
  });
  // What else the page has scheduled, so that the settle can end its quiet window as soon as
  // nothing can change the page on its own (settle.js, `calm`) instead of always waiting it out:
  // frame callbacks still to run, intervals (a short one is a ticker: never calm), idle
  // callbacks, fetches and XHRs in flight, and when the page last posted a message (React's
  // scheduler and others run their work from MessageChannel posts).
  const nativeFrame = window.requestAnimationFrame;
  state.frame = (callback) => nativeFrame.call(window, callback);
  state.frames = new Set();
  state.intervals = new Map();  // id -> { delay, at }
  state.idle = new Set();
  state.inflight = 0;
  state.lastPost = -Infinity;
  const trackCall = (owner, name, wrap) => {
    const original = owner && owner[name];
    if (typeof original !== 'function') return;
    // `wrap` calls the original once and lets its errors reach the page unchanged.
    owner[name] = new Proxy(original, { apply: wrap });
  };
  // A pending callback is forgotten when it runs or is cancelled. The callback is wrapped only
  // when it is a function; the page's return value and `this` are kept.
  const pending = (set) => (target, self, args) => {
    const [callback] = args;
    if (typeof callback !== 'function') return Reflect.apply(target, self, args);
    let id = 0;
    const wrapped = function (...rest) { set.delete(id); return callback.apply(this, rest); };
    id = Reflect.apply(target, self, [wrapped, ...args.slice(1)]);
    set.add(id);
    return id;
  };
  trackCall(window, 'requestAnimationFrame', pending(state.frames));
  trackCall(window, 'requestIdleCallback', pending(state.idle));
  const forgets = (pendingIds) => (target, self, args) => {
    pendingIds.delete(args[0]);
    return Reflect.apply(target, self, args);
  };
  trackCall(window, 'cancelAnimationFrame', forgets(state.frames));
  trackCall(window, 'cancelIdleCallback', forgets(state.idle));
  // An interval: its delay, and when it last ran (or was set): a ticker held back past its
  // due time by a starved renderer is seen as overdue (settle.js). `at` is null for a string
  // callback, which is not wrapped.
  trackCall(window, 'setInterval', (target, self, args) => {
    const [callback] = args;
    const tick = { delay: Number(args[1] || 0), at: null };
    let call = args;
    if (typeof callback === 'function') {
      tick.at = performance.now();
      const wrapped = function (...rest) {
        tick.at = performance.now();
        return callback.apply(this, rest);
      };
      call = [wrapped, ...args.slice(1)];
    }
    const id = Reflect.apply(target, self, call);
    state.intervals.set(id, tick);
    return id;
  });
  trackCall(window, 'clearInterval', forgets(state.intervals));
  const posted = (target, self, args) => {
    state.lastPost = performance.now();
    return Reflect.apply(target, self, args);
  };
  const nativePort = window.MessagePort && MessagePort.prototype.postMessage;  // ours: untracked
  trackCall(window, 'postMessage', posted);
  if (window.MessagePort) trackCall(MessagePort.prototype, 'postMessage', posted);
  // Resolves once every message the page posted before it has been delivered (one channel's
  // round trip: the posted-message queue is first in, first out).
  state.flush = () => new Promise((resolve) => {
    if (!nativePort) { resolve(); return; }
    const channel = new MessageChannel();
    channel.port1.onmessage = () => { channel.port1.close(); resolve(); };
    nativePort.call(channel.port2, 0);
  });
  // A navigation to another document that the page started (a link followed, a form
  // submitted, `location` set, a reload): the page is about to be replaced, so it is not settled
  // however still it holds. The Navigation API's `navigate` event fires inside the click (or the
  // script) that starts one. A navigation the page cancels or handles itself (`preventDefault`,
  // `intercept`: a same-document one) does not count, and one whose document never comes (a 204,
  // a download) stops counting after a while (settle.js).
  state.leaving = null;  // {at, event} of the last one
  if (window.navigation && typeof window.navigation.addEventListener === 'function') {
    native.call(window.navigation, 'navigate', (event) => {
      const to = event.destination;
      if (to && !to.sameDocument && !event.downloadRequest && !event.hashChange) {
        state.leaving = { at: performance.now(), event };
      }
    });
  }
  // A form submission navigates in a task of its own, after the click: its `submit` event is the
  // first sign (a page that handles the form itself cancels it).
  native.call(window, 'submit', (event) => {
    const form = event.target;
    const submitter = event.submitter;
    const target = (submitter && submitter.getAttribute('formtarget')) || (form && form.target) || '';
    const method = (submitter && submitter.getAttribute('formmethod')) || (form && form.method) || '';
    if (['', '_self', '_top', '_parent'].includes(target.toLowerCase()) && method !== 'dialog') {
      state.leaving = { at: performance.now(), event };
    }
  }, true);
  // Resize observers report in a frame's rendering steps (sticky headers, virtual lists): a page
  // that uses one is settled only after a frame is painted. Intersection observers (lazy
  // loaders, infinite lists) report in a task queued some time after that frame, which nothing
  // here can see coming: a page that uses one is never calm, and waits the window out.
  state.observed = 0;
  state.intersections = 0;
  const counted = (name, key) => {
    if (!window[name]) return;
    trackCall(window[name].prototype, 'observe', (target, self, args) => {
      state[key] += 1;
      return Reflect.apply(target, self, args);
    });
  };
  counted('ResizeObserver', 'observed');
  counted('IntersectionObserver', 'intersections');
  // A fetch is in flight until its promise settles, and so is the reading of a response's body
  // (`fetch(url).then((r) => r.json()).then(render)`: the render waits for both).
  const inFlight = (target, self, args) => {
    const result = Reflect.apply(target, self, args);
    if (result && typeof result.then === 'function') {
      state.inflight += 1;
      const done = () => { state.inflight -= 1; };
      Promise.prototype.then.call(result, done, done);
    }
    return result;
  };
  trackCall(window, 'fetch', inFlight);
  if (window.Response) {
    for (const read of ['arrayBuffer', 'blob', 'bytes', 'formData', 'json', 'text']) {
      trackCall(Response.prototype, read, inFlight);
    }
  }
  if (window.XMLHttpRequest) {
    trackCall(XMLHttpRequest.prototype, 'send', (target, self, args) => {
      // counted before it is sent: a synchronous request ends inside `send`
      let open = true;
      const end = () => { if (open) { open = false; state.inflight -= 1; } };
      native.call(self, 'loadend', end, { once: true });
      state.inflight += 1;
      try { return Reflect.apply(target, self, args); } catch (e) { end(); throw e; }
    });
  }
  // Script-driven animation: an element whose inline geometry (left, top, transform, margins,
  // size) a script rewrites again and again (three times, without a pause of a second) is
  // moving, even at a moment it is still. Other inline-style writes (a colour, Playwright's own
  // caret hiding) are ordinary changes. Its restyles do not keep the page from settling (the
  // scan flags it instead): a page with a ticker or a bouncing badge would otherwise cost the
  // whole settle timeout every step.
  const geometry = (el) => {
    const st = el.style;
    return st ? [st.transform, st.translate, st.left, st.top, st.right, st.bottom, st.inset,
      st.marginLeft, st.marginTop, st.width, st.height].join('|') : '';
  };
  state.restyled = new WeakMap();  // element -> {n: geometry rewrites in a row, last, sig}
  const observer = new MutationObserver((records) => {
    const now = performance.now();
    for (const r of records) {
      if (r.type !== 'attributes' || r.attributeName !== 'style') {
        state.lastMutation = now;
        continue;
      }
      const sig = geometry(r.target);
      const seen = state.restyled.get(r.target);
      if (!seen || seen.sig === sig) {
        if (!seen) state.restyled.set(r.target, { n: 0, last: now, sig });
        state.lastMutation = now;
        continue;
      }
      seen.n = now - seen.last > 1000 ? 1 : seen.n + 1;  // a pause of a second starts anew
      seen.last = now;
      seen.sig = sig;
      if (seen.n < 3) state.lastMutation = now;
    }
  });
  observer.observe(document, {
    subtree: true, childList: true, attributes: true, characterData: true,
  });
})();
