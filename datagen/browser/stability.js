// The boxes of the last scan's elements measured again (same order; null: gone or out of
// view), and the scroll offset: compared with the scan by Session.observe to tell whether the
// screenshot taken in between shows the elements where the scan put them.
() => {
  const live = window[Symbol.for('datagen.scan')] || [];
  return JSON.stringify({
    title: document.title,
    scrollX: window.scrollX,
    scrollY: window.scrollY,
    boxes: live.map((measure) => {
      try { return measure(); } catch (e) { return null; }
    }),
  });
}
