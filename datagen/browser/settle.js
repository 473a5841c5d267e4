// Wait, bounded, until the page holds still: web fonts loaded, no DOM mutation for `quietMs`
// and no short timer still to fire (page_init.js keeps both), no finite CSS transition or
// animation still running, and a frame painted after that. Returns
// {quiet: false} when `timeoutMs` ran out first (a page that animates or polls forever).
// A finite transition or animation with at most a second left is fast-forwarded to its end
// (`Animation.finish`, as Playwright's screenshots with `animations: "disabled"`); a longer
// one is waited for; an infinite one is neither (the scan flags the boxes it moves).
//
// The quiet window ends early when the page is calm: it has nothing scheduled that could
// change it on its own (no timer, frame or idle callback pending, no short interval, no fetch
// or XHR in flight, no intersection observer: page_init.js follows them), the messages it
// posted have been delivered, and a frame has been painted since its last change where
// anything on the page runs in one (`frameless`). Then waiting out the rest of the window
// could only see a change that nothing on the page has asked for. `early` says which way it
// ended.
async ({ quietMs, timeoutMs }) => {
  const start = performance.now();
  const state = window[Symbol.for('datagen.page')];
  // The page's setTimeout counts its timers (page_init.js): ours must not be among them.
  const sleep = state ? state.sleep : (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const within = state && state.within ? state.within
    : (promise, ms) => Promise.race([promise.then(() => {}, () => {}), sleep(ms)]);
  const nextFrame = state && state.frame ? state.frame : (cb) => requestAnimationFrame(cb);
  // a page in a background state paints no frames
  const frame = () => within(new Promise((resolve) => nextFrame(() => resolve())), 100);
  if (document.fonts && document.fonts.status !== 'loaded') {
    await within(document.fonts.ready, timeoutMs);
  }
  // A transition or animation that will end (a panel sliding in once) is waited for;
  // infinite ones are not (their boxes are flagged by the scan instead).
  const ending = () => document.getAnimations().filter((a) => {
    if (a.playState !== 'running' || !a.effect) return false;
    const t = a.effect.getComputedTiming();
    return Number.isFinite(t.endTime) && t.localTime !== null && t.localTime < t.endTime;
  });
  const finishing = () => ending().length > 0;
  // The page started a navigation to another document (page_init.js) that has not replaced it
  // yet: not still (the evaluate ends when the new document commits). One that never commits
  // (a 204, a download the browser refused) stops counting after LEAVING_MS; by then the
  // session sees its open request.
  const LEAVING_MS = 1000;
  const leaving = () => {
    const l = state && state.leaving;
    return Boolean(l) && performance.now() - l.at < LEAVING_MS && !l.event.defaultPrevented
      && !(window.navigation && window.navigation.transition);
  };
  const SHORT_MS = 1000;  // as page_init.js's short timers
  const shortLeft = (a) => {
    const t = a.effect.getComputedTiming();
    return (t.endTime - t.localTime) / Math.abs(a.playbackRate || 1) <= SHORT_MS;
  };
  // Nothing scheduled that could change the page by itself (a ticker of an interval under a
  // second counts as scheduled, and so does an intersection observer: their pages are never
  // calm, and wait the window out).
  const TICKER_MS = 1000;
  const tickers = () => (state && state.intervals ? [...state.intervals.values()] : [])
    .filter((t) => t.delay < TICKER_MS);
  const ticking = () => tickers().length > 0;
  // A ticker that has not run for longer than its delay and OVERDUE_MS was held back by a
  // starved renderer (timers run late, ours too, and ours may run first): its run may change
  // the page, so the quiet so far proves nothing. (Else a loader updating every 25 ms, paused
  // 50 ms by a loaded machine between our wait's end and its tick, passed for a settled page.)
  // A hidden page's timers are throttled by design (to once a second): not held back.
  const OVERDUE_MS = 10;
  const overdue = (now) => document.visibilityState === 'visible' && tickers()
    .some((t) => t.at !== null && now - t.at > Math.max(t.delay, 4) + OVERDUE_MS);
  const calm = () => Boolean(state && state.frames && state.flush) && !state.frames.size
    && !state.idle.size && !state.inflight && !state.intersections && !ticking();
  // Nothing on the page runs in a frame's rendering steps (no frame callback or intersection
  // observer: `calm`; no resize observer; no lazy image or iframe, whose load a frame starts): a
  // frame painted after the last change would show the page nothing new, and is not waited
  // for (it costs ~5 ms of CPU across the renderer, the GPU process and the browser; the
  // screenshot paints its own).
  const frameless = () => !state.observed
    && !document.querySelector('img[loading=lazy], iframe[loading=lazy]');
  // A wait that ran far past what was asked means the renderer was starved (a loaded machine):
  // the page's own timers were held up as long, so no change during that gap proves nothing,
  // and quiet counts again from its end. (Else a loader updating every 25 ms, paused by the
  // machine, passed for a settled page.) STARVED_MS covers a frame's wait (~17 ms).
  const STARVED_MS = 35;
  const POLL_MS = 20;  // while something pending may be done soon, look again this often
  let quietFrom = -Infinity, asked = 0, before = start, painted = -Infinity;
  // Already quiet (the usual case a while after an action): no frame to wait for, since the
  // last one painted after the last change. Else wait frame by frame.
  for (let first = true; ; first = false) {
    if (!first) {
      await frame();
      painted = performance.now();
    }
    let now = performance.now();
    if (!first && now - before > asked + STARVED_MS) quietFrom = now;
    let last = Math.max(state ? state.lastMutation : start, quietFrom);
    const timers = state ? state.timers.size : 0;
    const animations = timers ? [] : ending();
    const still = !timers && !animations.length && !leaving();
    // A ticker's page is not taken as quiet at the first look: a starved renderer (a loaded
    // machine) held the ticker's overdue tick back as long as this evaluate, so the gap before
    // it proves nothing; after one wait the overdue tick has run (it was due first).
    const judged = !first || !ticking();
    if (now - last >= quietMs && still && judged && !overdue(now)) {
      return { quiet: true, early: false };
    }
    if (still && (painted > last || frameless()) && calm()) {
      // A frame painted since the last change, or nothing waits for one: deliver what the page
      // posted before, then look again.
      const posted = state.lastPost, changed = last;
      await state.flush();
      now = performance.now();
      last = Math.max(state.lastMutation, quietFrom);
      const framed = painted > last ? state.lastPost < painted : posted === state.lastPost;
      const settled = framed && last <= changed && !state.timers.size;
      if (settled && calm() && !finishing() && !leaving()) {
        return { quiet: true, early: true };
      }
    }
    if (now - start >= timeoutMs) return { quiet: false };
    if (animations.length) {
      // Transitions and animations that will end, and no timer pending. A short one (a hover
      // fade, a panel sliding in, a badge's bump) is fast-forwarded to its end, as Playwright's
      // screenshot does with `animations: "disabled"`: the page shows what it would once it
      // ends, its end events fire, and no frame is drawn for it in between. A longer one is
      // waited for (until its end or the limit) without asking for a frame at a time.
      const long = animations.filter((a) => {
        if (!shortLeft(a)) return true;
        try { a.finish(); return false; } catch (e) { return true; }
      });
      if (long.length) {
        asked = timeoutMs - (now - start);
        before = performance.now();
        await within(Promise.all(long.map((a) => a.finished)), asked);
      }
      continue;
    }
    // Calm and still: the next frame may end it (asked 0: just that frame). Something pending
    // (a timer, a frame callback, a fetch) may be done soon: look again within POLL_MS.
    const wait = still && calm() ? 0 : Math.max(10, Math.min(POLL_MS, quietMs - (now - last)));
    asked = Math.min(wait, timeoutMs - (now - start));
    before = performance.now();
    if (asked > 0) await sleep(asked);
  }
}
