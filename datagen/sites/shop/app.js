(function () {
  'use strict';

  var ICONS = {
    headphones: '<path d="M14 38V32a18 18 0 0 1 36 0v6" fill="none" stroke="#1f2937" stroke-width="5" stroke-linecap="round"/><rect x="9" y="34" width="12" height="20" rx="5" fill="#1f2937"/><rect x="43" y="34" width="12" height="20" rx="5" fill="#1f2937"/><rect x="12" y="38" width="6" height="12" rx="3" fill="#f97316"/><rect x="46" y="38" width="6" height="12" rx="3" fill="#f97316"/>',
    watch: '<rect x="24" y="4" width="16" height="56" rx="6" fill="#334155"/><rect x="15" y="17" width="34" height="30" rx="9" fill="#0f172a"/><rect x="19" y="21" width="26" height="22" rx="6" fill="#22d3ee"/><path d="M32 26v6l4 3" stroke="#0f172a" stroke-width="2.5" fill="none" stroke-linecap="round"/>',
    speaker: '<rect x="16" y="6" width="32" height="52" rx="8" fill="#1e293b"/><circle cx="32" cy="38" r="11" fill="#475569"/><circle cx="32" cy="38" r="5" fill="#94a3b8"/><circle cx="32" cy="18" r="5" fill="#475569"/>',
    mug: '<path d="M14 18h30v26a10 10 0 0 1-10 10H24a10 10 0 0 1-10-10z" fill="#f8fafc" stroke="#0f766e" stroke-width="3"/><path d="M44 24h4a7 7 0 0 1 0 14h-4" fill="none" stroke="#0f766e" stroke-width="4"/><path d="M24 8c-2 3 2 5 0 8M32 8c-2 3 2 5 0 8" stroke="#94a3b8" stroke-width="2" fill="none" stroke-linecap="round"/>',
    lamp: '<path d="M20 8h20l8 16H12z" fill="#facc15"/><rect x="30" y="24" width="4" height="26" fill="#57534e"/><rect x="18" y="50" width="28" height="6" rx="3" fill="#44403c"/><path d="M18 28l-4 6M30 28v8M42 28l4 6" stroke="#fde68a" stroke-width="2" stroke-linecap="round"/>',
    knife: '<path d="M8 40L44 12c4-2 7 1 5 5L26 42z" fill="#cbd5e1" stroke="#64748b" stroke-width="1.5"/><rect x="4" y="38" width="24" height="10" rx="4" transform="rotate(-38 16 43)" fill="#78350f"/>',
    bookBlue: '<rect x="14" y="6" width="36" height="52" rx="3" fill="#2563eb"/><rect x="14" y="6" width="7" height="52" fill="#1e40af"/><rect x="26" y="16" width="18" height="4" rx="2" fill="#bfdbfe"/><rect x="26" y="24" width="12" height="3" rx="1.5" fill="#bfdbfe"/><text x="34" y="46" font-size="11" font-family="Arial, sans-serif" font-weight="700" fill="#fde047" text-anchor="middle">JS</text>',
    bookRed: '<rect x="14" y="6" width="36" height="52" rx="3" fill="#7f1d1d"/><rect x="14" y="6" width="7" height="52" fill="#450a0a"/><circle cx="35" cy="28" r="8" fill="#fecaca" opacity=".85"/><path d="M24 44h22" stroke="#fecaca" stroke-width="3"/>',
    bookGreen: '<rect x="14" y="6" width="36" height="52" rx="3" fill="#65a30d"/><rect x="14" y="6" width="7" height="52" fill="#3f6212"/><ellipse cx="35" cy="30" rx="10" ry="6" fill="#fefce8"/><path d="M27 30h16" stroke="#a16207" stroke-width="2"/>',
    yoga: '<rect x="8" y="22" width="44" height="20" fill="#8b5cf6"/><ellipse cx="52" cy="32" rx="5" ry="10" fill="#6d28d9"/><ellipse cx="52" cy="32" rx="2.5" ry="5" fill="#c4b5fd"/><ellipse cx="8" cy="32" rx="5" ry="10" fill="#a78bfa"/>',
    bottle: '<rect x="26" y="4" width="12" height="8" rx="2" fill="#0f172a"/><path d="M24 12h16v6l4 6v30a6 6 0 0 1-6 6H26a6 6 0 0 1-6-6V24l4-6z" fill="#0ea5e9"/><rect x="22" y="30" width="20" height="12" fill="#e0f2fe"/>',
    shoe: '<path d="M6 40c0-8 4-20 10-20 4 0 6 6 12 8l18 6c8 2 12 6 12 10v4H6z" fill="#ef4444"/><path d="M6 48h52v4a3 3 0 0 1-3 3H9a3 3 0 0 1-3-3z" fill="#f8fafc" stroke="#cbd5e1"/><path d="M22 28l4 4M27 26l4 4M32 29l3 3" stroke="#fff" stroke-width="2" stroke-linecap="round"/>'
  };

  var CATEGORIES = {
    all: 'All products',
    electronics: 'Electronics',
    home: 'Home & Kitchen',
    books: 'Books',
    sports: 'Sports & Outdoors'
  };

  var PRODUCTS = [
    { id: 'wireless-headphones', name: 'Wireless Headphones', price: 89.99, category: 'electronics', rating: 4.6, reviews: 1284, icon: 'headphones', bg: '#ffedd5' },
    { id: 'ceramic-mug', name: 'Ceramic Coffee Mug', price: 14.99, category: 'home', rating: 4.8, reviews: 962, icon: 'mug', bg: '#ccfbf1' },
    { id: 'javascript-handbook', name: 'The JavaScript Handbook', price: 29.99, category: 'books', rating: 4.5, reviews: 341, icon: 'bookBlue', bg: '#dbeafe' },
    { id: 'yoga-mat', name: 'Yoga Mat', price: 25.00, category: 'sports', rating: 4.4, reviews: 518, icon: 'yoga', bg: '#ede9fe' },
    { id: 'smart-watch', name: 'Smart Watch', price: 149.00, category: 'electronics', rating: 4.3, reviews: 877, icon: 'watch', bg: '#e0f2fe' },
    { id: 'led-desk-lamp', name: 'LED Desk Lamp', price: 34.95, category: 'home', rating: 4.2, reviews: 230, icon: 'lamp', bg: '#fef9c3' },
    { id: 'silent-harbor', name: 'The Silent Harbor (Novel)', price: 12.99, category: 'books', rating: 4.1, reviews: 1893, icon: 'bookRed', bg: '#fee2e2' },
    { id: 'water-bottle', name: 'Insulated Water Bottle', price: 19.95, category: 'sports', rating: 4.7, reviews: 2104, icon: 'bottle', bg: '#e0f2fe' },
    { id: 'bluetooth-speaker', name: 'Bluetooth Speaker', price: 59.50, category: 'electronics', rating: 4.4, reviews: 645, icon: 'speaker', bg: '#e2e8f0' },
    { id: 'chefs-knife', name: "Chef's Knife", price: 49.00, category: 'home', rating: 4.7, reviews: 402, icon: 'knife', bg: '#f1f5f9' },
    { id: 'weeknight-cookbook', name: 'Weeknight Cookbook', price: 24.00, category: 'books', rating: 4.6, reviews: 288, icon: 'bookGreen', bg: '#ecfccb' },
    { id: 'running-shoes', name: 'Running Shoes', price: 119.00, category: 'sports', rating: 4.5, reviews: 1150, icon: 'shoe', bg: '#fee2e2' }
  ];
  var byId = {};
  PRODUCTS.forEach(function (p, i) { p.order = i; byId[p.id] = p; });

  var state = {
    category: 'all',
    sort: 'featured',
    search: '',
    cart: {},          // id -> quantity, insertion ordered
    cartOpen: false,
    orderPlaced: false,
    lastOrder: null
  };
  var orderSeq = 10480;

  var app = document.getElementById('shop-app');
  var grid = document.getElementById('product-grid');
  var noResults = document.getElementById('no-results');
  var resultCount = document.getElementById('result-count');
  var title = document.getElementById('catalogue-title');
  var searchInput = document.getElementById('search');
  var sortSelect = document.getElementById('sort');
  var cartButton = document.getElementById('cart-button');
  var cartCount = document.getElementById('cart-count');
  var drawer = document.getElementById('cart-drawer');
  var backdrop = document.getElementById('drawer-backdrop');
  var cartItems = document.getElementById('cart-items');
  var cartEmpty = document.getElementById('cart-empty');
  var cartBody = document.getElementById('cart-body');
  var cartFoot = document.getElementById('cart-foot');
  var subtotalEl = document.getElementById('cart-subtotal');
  var checkoutBtn = document.getElementById('checkout-btn');
  var confirmation = document.getElementById('order-confirmation');
  var toast = document.getElementById('toast');
  var toastTimer = null;

  function money(n) { return '$' + n.toFixed(2); }
  function svg(icon, size) {
    return '<svg width="' + size + '" height="' + size + '" viewBox="0 0 64 64" aria-hidden="true">' + ICONS[icon] + '</svg>';
  }
  function stars(r) {
    var full = Math.round(r);
    return '★★★★★'.slice(0, full) + '☆☆☆☆☆'.slice(0, 5 - full);
  }
  function cartQuantity() {
    return Object.keys(state.cart).reduce(function (s, id) { return s + state.cart[id]; }, 0);
  }
  function cartSubtotal() {
    return Object.keys(state.cart).reduce(function (s, id) { return s + state.cart[id] * byId[id].price; }, 0);
  }

  function visibleProducts() {
    var q = state.search.trim().toLowerCase();
    var list = PRODUCTS.filter(function (p) {
      if (state.category !== 'all' && p.category !== state.category) return false;
      if (q && (p.name + ' ' + CATEGORIES[p.category]).toLowerCase().indexOf(q) === -1) return false;
      return true;
    });
    var cmp = {
      featured: function (a, b) { return a.order - b.order; },
      'price-asc': function (a, b) { return a.price - b.price; },
      'price-desc': function (a, b) { return b.price - a.price; },
      rating: function (a, b) { return b.rating - a.rating || a.order - b.order; },
      name: function (a, b) { return a.name.localeCompare(b.name); }
    }[state.sort];
    return list.sort(cmp);
  }

  function renderGrid() {
    var list = visibleProducts();
    grid.innerHTML = '';
    list.forEach(function (p) {
      var card = document.createElement('article');
      card.className = 'card';
      card.dataset.productId = p.id;
      card.dataset.price = String(p.price);
      card.dataset.category = p.category;
      card.setAttribute('aria-label', p.name);
      card.innerHTML =
        '<div class="thumb" style="background:' + p.bg + '">' + svg(p.icon, 84) + '</div>' +
        '<div class="card-body">' +
          '<span class="cat-label">' + CATEGORIES[p.category] + '</span>' +
          '<h3 class="product-name"></h3>' +
          '<div class="rating" aria-label="Rated ' + p.rating + ' out of 5"><span class="stars" aria-hidden="true">' + stars(p.rating) + '</span>' +
            '<span aria-hidden="true">' + p.rating.toFixed(1) + ' (' + p.reviews.toLocaleString('en-US') + ')</span></div>' +
          '<div class="price-row"><span class="price">' + money(p.price) + '</span></div>' +
        '</div>';
      card.querySelector('.product-name').textContent = p.name;
      var btn = document.createElement('button');
      btn.type = 'button';
      btn.className = 'add-btn';
      btn.textContent = 'Add to cart';
      btn.setAttribute('aria-label', 'Add ' + p.name + ' to cart');
      btn.dataset.productId = p.id;
      btn.addEventListener('click', function () {
        addToCart(p.id);
        btn.textContent = 'Added ✓';
        btn.classList.add('added');
        setTimeout(function () { btn.textContent = 'Add to cart'; btn.classList.remove('added'); }, 1200);
      });
      card.querySelector('.price-row').appendChild(btn);
      grid.appendChild(card);
    });
    noResults.hidden = list.length > 0;
    resultCount.textContent = list.length + (list.length === 1 ? ' product' : ' products') +
      (state.search.trim() ? ' matching “' + state.search.trim() + '”' : '');
    title.textContent = CATEGORIES[state.category];
    Array.prototype.forEach.call(document.querySelectorAll('.cat'), function (b) {
      b.setAttribute('aria-pressed', String(b.dataset.category === state.category));
    });
  }

  function renderCart() {
    var qty = cartQuantity();
    cartCount.textContent = String(qty);
    cartButton.setAttribute('aria-label', 'Cart, ' + qty + (qty === 1 ? ' item' : ' items'));
    cartButton.setAttribute('aria-expanded', String(state.cartOpen));
    cartItems.innerHTML = '';
    Object.keys(state.cart).forEach(function (id) {
      var p = byId[id];
      var q = state.cart[id];
      var li = document.createElement('li');
      li.dataset.productId = id;
      li.dataset.quantity = String(q);
      li.innerHTML =
        '<div class="mini-thumb" style="background:' + p.bg + '">' + svg(p.icon, 34) + '</div>' +
        '<div><div class="item-name"></div><div class="item-price">' + money(p.price) + ' each</div>' +
          '<div class="qty"><button type="button" class="dec">−</button><span class="q">' + q + '</span><button type="button" class="inc">+</button></div></div>' +
        '<div><div class="line-total">' + money(p.price * q) + '</div><button type="button" class="remove-btn">Remove</button></div>';
      li.querySelector('.item-name').textContent = p.name;
      var dec = li.querySelector('.dec'), inc = li.querySelector('.inc'), rm = li.querySelector('.remove-btn');
      dec.setAttribute('aria-label', 'Decrease quantity of ' + p.name);
      inc.setAttribute('aria-label', 'Increase quantity of ' + p.name);
      rm.setAttribute('aria-label', 'Remove ' + p.name + ' from cart');
      dec.addEventListener('click', function () { setQty(id, q - 1); });
      inc.addEventListener('click', function () { setQty(id, q + 1); });
      rm.addEventListener('click', function () { setQty(id, 0); });
      cartItems.appendChild(li);
    });
    cartEmpty.hidden = qty > 0;
    subtotalEl.textContent = money(cartSubtotal());
    checkoutBtn.disabled = qty === 0;

    drawer.hidden = !state.cartOpen;
    backdrop.hidden = !state.cartOpen;
    confirmation.hidden = !state.orderPlaced;
    cartBody.hidden = state.orderPlaced;
    cartFoot.hidden = state.orderPlaced;

    app.dataset.cartCount = String(qty);
    app.dataset.cart = JSON.stringify(state.cart);
    app.dataset.cartOpen = String(state.cartOpen);
    app.dataset.orderPlaced = String(!!state.lastOrder);
    if (state.lastOrder) app.dataset.lastOrder = JSON.stringify(state.lastOrder);
  }

  function syncFilters() {
    app.dataset.category = state.category;
    app.dataset.sort = state.sort;
    app.dataset.search = state.search;
  }

  function showToast(msg) {
    toast.textContent = msg;
    toast.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(function () { toast.hidden = true; }, 2200);
  }

  function addToCart(id) {
    state.cart[id] = (state.cart[id] || 0) + 1;
    state.orderPlaced = false;
    renderCart();
    cartCount.classList.remove('bump');
    void cartCount.offsetWidth;
    cartCount.classList.add('bump');
    showToast(byId[id].name + ' added to cart');
  }

  function setQty(id, q) {
    if (q <= 0) delete state.cart[id];
    else state.cart[id] = q;
    renderCart();
  }

  function openCart() {
    state.cartOpen = true;
    if (cartQuantity() > 0) state.orderPlaced = false;
    renderCart();
    document.getElementById('close-cart').focus();
  }
  function closeCart() {
    state.cartOpen = false;
    renderCart();
    cartButton.focus();
  }

  searchInput.addEventListener('input', function () {
    state.search = searchInput.value;
    syncFilters();
    renderGrid();
  });
  document.getElementById('search-form').addEventListener('submit', function (e) {
    e.preventDefault();
    state.search = searchInput.value;
    syncFilters();
    renderGrid();
  });
  sortSelect.addEventListener('change', function () {
    state.sort = sortSelect.value;
    syncFilters();
    renderGrid();
  });
  Array.prototype.forEach.call(document.querySelectorAll('.cat'), function (b) {
    b.addEventListener('click', function () {
      state.category = b.dataset.category;
      syncFilters();
      renderGrid();
    });
  });

  cartButton.addEventListener('click', function () { state.cartOpen ? closeCart() : openCart(); });
  document.getElementById('close-cart').addEventListener('click', closeCart);
  backdrop.addEventListener('click', closeCart);
  document.addEventListener('keydown', function (e) {
    if (e.key === 'Escape' && state.cartOpen) closeCart();
  });
  document.getElementById('account-btn').addEventListener('click', function () {
    showToast('Sign-in is not available in this demo store.');
  });

  checkoutBtn.addEventListener('click', function () {
    if (cartQuantity() === 0) return;
    var number = 'HG-' + (++orderSeq);
    state.lastOrder = {
      number: number,
      items: state.cart,
      distinct: Object.keys(state.cart).length,
      quantity: cartQuantity(),
      total: Math.round(cartSubtotal() * 100) / 100
    };
    document.getElementById('order-number').textContent = number;
    document.getElementById('order-summary').textContent =
      state.lastOrder.quantity + (state.lastOrder.quantity === 1 ? ' item' : ' items') + ' · ' + money(state.lastOrder.total) +
      '. A receipt is on its way to your inbox.';
    state.cart = {};
    state.orderPlaced = true;
    renderCart();
    document.getElementById('continue-shopping').focus();
  });
  document.getElementById('continue-shopping').addEventListener('click', function () {
    state.orderPlaced = false;
    closeCart();
  });

  function dismissCookies(choice) {
    document.getElementById('cookie-banner').hidden = true;
    app.dataset.cookieConsent = choice;
  }
  document.getElementById('cookie-accept').addEventListener('click', function () { dismissCookies('accepted'); });
  document.getElementById('cookie-reject').addEventListener('click', function () { dismissCookies('essential'); });

  syncFilters();
  renderGrid();
  renderCart();
})();
