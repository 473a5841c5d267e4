// A page's signs of a bot wall, CAPTCHA or login wall (classified by walls.py), read in one
// round trip: alone after a start page's load, and inside observe.js before every observation.
// Never throws (a page without a body reads as empty).
() => {
  const d = document, q = (s) => { try { return !!d.querySelector(s); } catch (e) { return false; } };
  const shown = (e) => { const r = e.getBoundingClientRect(); const s = getComputedStyle(e);
    return r.width > 20 && r.height > 20 && s.visibility !== 'hidden' && s.display !== 'none'; };
  const srcs = (sel) => Array.from(d.querySelectorAll(sel)).map((e) => e.src || '').slice(0, 60);
  const text = d.body ? (d.body.innerText || '') : '';
  const pw = Array.from(d.querySelectorAll('input[type=password]')).some(shown);
  // The page's own fields (a contact form's name, email, message): a challenge page has none
  // (a checkbox or a hidden token at most). Those inside a CAPTCHA widget are the widget's.
  const NOT_FIELDS = ['hidden', 'checkbox', 'radio', 'submit', 'button', 'image', 'reset', 'file'];
  const WIDGET = '.g-recaptcha, .h-captcha, .cf-turnstile, #px-captcha, [id^="sec-"]';
  let fields = 0;  // counted up to 5 (only "none" matters): a form of 500 fields costs 5 looks
  for (const e of d.querySelectorAll('input, textarea, select')) {
    if (e.tagName === 'INPUT' && NOT_FIELDS.includes((e.type || '').toLowerCase())) continue;
    const r = e.getBoundingClientRect(), s = getComputedStyle(e);
    if (r.width > 1 && r.height > 1 && s.visibility !== 'hidden' && s.display !== 'none'
      && !e.closest(WIDGET) && ++fields >= 5) break;
  }
  const widgets = Array.from(d.querySelectorAll(
    '.g-recaptcha, iframe[src*="recaptcha/api2/anchor"], iframe[src*="recaptcha/api2/bframe"], '
    + 'iframe[src*="recaptcha/enterprise/anchor"], .h-captcha, iframe[src*="hcaptcha.com"], '
    + '.cf-turnstile, iframe[src*="challenges.cloudflare.com"]')).filter(shown)
    .map((e) => e.className && typeof e.className === 'string' ? e.className : (e.src || e.tagName));
  return {
    url: location.href, title: d.title || '', text: text.slice(0, 4000), text_length: text.length,
    links: d.querySelectorAll('a[href]').length, password: pw, fields, widgets: widgets.slice(0, 5),
    iframes: srcs('iframe[src]'), scripts: srcs('script[src]'),
    cf_chl: typeof window._cf_chl_opt !== 'undefined',
    markers: ['#challenge-form', '#challenge-running', '#challenge-stage', '#cf-challenge-running',
      '.cf-browser-verification', '#cf-please-wait', '#px-captcha', '#sec-if-cpt-container',
      '#sec-cpt-if', '#captcha-container', '#distilIdentificationBlock'].filter(q),
  };
}
