(function () {
  'use strict';

  // [name, department, role, salary (USD/year), start date (ISO)]
  var EMPLOYEES = [
    ["Fatima Yilmaz", "Marketing", "Marketing Manager", 101000, "2016-07-28"],
    ["Isla Larsen", "Human Resources", "Recruiter", 71500, "2019-11-13"],
    ["Theo Nakamura", "Sales", "Account Executive", 67000, "2015-03-05"],
    ["Julia Johnson", "Sales", "Account Executive", 83500, "2017-01-16"],
    ["Ava Martins", "Engineering", "Senior Engineer", 147000, "2018-01-05"],
    ["Tomás Ahmed", "Support", "Support Lead", 71000, "2019-10-19"],
    ["Lena Nguyen", "Engineering", "QA Engineer", 82000, "2022-10-21"],
    ["Arjun Silva", "Sales", "SDR", 49000, "2021-11-26"],
    ["Ruby Rossi", "Marketing", "Marketing Manager", 105000, "2020-07-13"],
    ["Marco Dubois", "Support", "Support Specialist", 53000, "2024-07-02"],
    ["Sienna García", "Design", "Product Designer", 90000, "2017-08-06"],
    ["Amara Bianchi", "Design", "Product Designer", 99000, "2023-01-04"],
    ["Victor Fischer", "Finance", "Financial Analyst", 88500, "2016-09-04"],
    ["Liam Ibrahim", "Engineering", "QA Engineer", 79000, "2015-04-20"],
    ["Felix Osei", "Engineering", "Engineering Manager", 155000, "2024-05-12"],
    ["Malik Andersen", "Support", "Support Lead", 70000, "2015-02-28"],
    ["Zara Hughes", "Sales", "Sales Manager", 113500, "2021-08-10"],
    ["Priya Nair", "Engineering", "VP of Engineering", 212000, "2016-09-12"],
    ["Hannah Reyes", "Sales", "Account Executive", 66500, "2015-12-11"],
    ["Diego Costa", "Design", "UX Researcher", 100500, "2016-09-01"],
    ["Leah Romero", "Marketing", "Marketing Specialist", 75500, "2019-03-23"],
    ["Kwame Patel", "Finance", "Controller", 121000, "2022-05-21"],
    ["Nina Haddad", "Design", "Product Designer", 111000, "2018-09-12"],
    ["Sofia Sato", "Sales", "Account Executive", 73500, "2017-09-18"],
    ["Yuki Tanaka", "Engineering", "QA Engineer", 85500, "2023-04-26"],
    ["Elena Ward", "Finance", "Financial Analyst", 83000, "2017-04-17"],
    ["Mei Cohen", "Sales", "Sales Manager", 109500, "2014-01-26"],
    ["Ethan Kowalski", "Finance", "Accountant", 75500, "2018-04-23"],
    ["Jamal Lindqvist", "Engineering", "QA Engineer", 92500, "2019-06-03"],
    ["Lucas Eriksen", "Design", "Product Designer", 91500, "2017-08-07"],
    ["Mateo Schmidt", "Finance", "Accountant", 66500, "2021-10-20"],
    ["Omar Chen", "Human Resources", "HR Generalist", 63000, "2024-06-26"],
    ["Clara Walsh", "Engineering", "Software Engineer", 103000, "2020-12-25"],
    ["Daniel Kim", "Engineering", "Senior Engineer", 161500, "2016-07-26"],
    ["Grace Quinn", "Sales", "SDR", 53500, "2015-12-13"],
    ["Oscar Petrov", "Human Resources", "Recruiter", 71000, "2015-12-06"],
    ["Ingrid Moreno", "Support", "Support Specialist", 47000, "2014-03-19"],
    ["Henrik Müller", "Marketing", "Content Strategist", 67000, "2023-10-16"],
    ["Kenji Okafor", "Engineering", "QA Engineer", 83000, "2022-09-05"],
    ["Noah Brennan", "Human Resources", "HR Generalist", 55000, "2024-02-17"],
    ["Aisha Berg", "Engineering", "Senior Engineer", 158500, "2017-04-01"],
    ["Maya Alvarez", "Engineering", "QA Engineer", 85000, "2018-09-08"],
    ["Rafael Farouk", "Marketing", "Marketing Manager", 102500, "2018-09-14"],
    ["Chloe Mensah", "Engineering", "Senior Engineer", 134000, "2019-08-22"],
    ["Samuel Novak", "Marketing", "Marketing Manager", 109000, "2020-09-05"]
  ];

  var DEPT_COLORS = {
    'Engineering': ['#e0f2fe', '#0369a1'],
    'Sales': ['#dcfce7', '#15803d'],
    'Marketing': ['#fce7f3', '#be185d'],
    'Finance': ['#fef3c7', '#b45309'],
    'Human Resources': ['#ede9fe', '#6d28d9'],
    'Design': ['#ffedd5', '#c2410c'],
    'Support': ['#e2e8f0', '#334155']
  };
  var AVATAR_COLORS = ['#0284c7', '#7c3aed', '#db2777', '#ea580c', '#16a34a', '#0891b2', '#4f46e5', '#b45309'];

  var people = EMPLOYEES.map(function (r, i) {
    return { idx: i, name: r[0], department: r[1], role: r[2], salary: r[3], start: r[4] };
  });

  var state = { page: 1, pageSize: 10, sortKey: '', sortDir: 'none', filter: '' };

  var app = document.getElementById('table-app');
  var tbody = document.getElementById('table-body');
  var filterInput = document.getElementById('filter');
  var pageSizeSelect = document.getElementById('page-size');
  var prevBtn = document.getElementById('prev-page');
  var nextBtn = document.getElementById('next-page');
  var pageNumbers = document.getElementById('page-numbers');
  var rangeEl = document.getElementById('range');
  var noRows = document.getElementById('no-rows');
  var headers = Array.prototype.slice.call(document.querySelectorAll('thead th[data-key]'));
  var MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

  function fmtDate(iso) {
    var p = iso.split('-');
    return MONTHS[Number(p[1]) - 1] + ' ' + Number(p[2]) + ', ' + p[0];
  }
  function fmtMoney(n) { return '$' + n.toLocaleString('en-US'); }
  function slug(s) {
    return s.normalize('NFD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[^a-z]+/g, '.');
  }
  function initials(name) { return name.split(' ').map(function (w) { return w[0]; }).join('').slice(0, 2); }

  function filtered() {
    var q = state.filter.trim().toLowerCase();
    var list = people.filter(function (p) {
      return !q || (p.name + ' ' + p.department + ' ' + p.role).toLowerCase().indexOf(q) !== -1;
    });
    if (state.sortKey) {
      var k = state.sortKey;
      var dir = state.sortDir === 'descending' ? -1 : 1;
      list.sort(function (a, b) {
        var c;
        if (k === 'salary') c = a.salary - b.salary;
        else c = String(a[k]).localeCompare(String(b[k]));
        return c * dir || a.idx - b.idx;
      });
    }
    return list;
  }

  function writeHash() {
    var h = '#page=' + state.page + '&size=' + state.pageSize;
    if (state.sortKey) h += '&sort=' + state.sortKey + '&dir=' + (state.sortDir === 'descending' ? 'desc' : 'asc');
    if (state.filter.trim()) h += '&q=' + encodeURIComponent(state.filter.trim());
    if (location.hash !== h) history.replaceState(null, '', h);
  }

  function readHash() {
    var h = location.hash.replace(/^#/, '');
    if (!h) return;
    h.split('&').forEach(function (kv) {
      var i = kv.indexOf('=');
      if (i < 0) return;
      var k = kv.slice(0, i), v;
      try { v = decodeURIComponent(kv.slice(i + 1)); } catch (e) { return; }
      if (k === 'page' && /^\d+$/.test(v)) state.page = Number(v);
      else if (k === 'size' && ['5', '10', '25', '50'].indexOf(v) !== -1) state.pageSize = Number(v);
      else if (k === 'sort' && ['name', 'department', 'role', 'salary', 'start'].indexOf(v) !== -1) state.sortKey = v;
      else if (k === 'dir') state.sortDir = v === 'desc' ? 'descending' : 'ascending';
      else if (k === 'q') state.filter = v;
    });
    if (!state.sortKey) state.sortDir = 'none';
    pageSizeSelect.value = String(state.pageSize);
    filterInput.value = state.filter;
  }

  function update() {
    render();
    writeHash();
  }

  function render() {
    var list = filtered();
    var pageCount = Math.max(1, Math.ceil(list.length / state.pageSize));
    if (state.page > pageCount) state.page = pageCount;
    if (state.page < 1) state.page = 1;
    var start = (state.page - 1) * state.pageSize;
    var rows = list.slice(start, start + state.pageSize);

    tbody.innerHTML = '';
    rows.forEach(function (p) {
      var tr = document.createElement('tr');
      tr.dataset.name = p.name;
      tr.dataset.department = p.department;
      tr.dataset.role = p.role;
      tr.dataset.salary = String(p.salary);
      tr.dataset.start = p.start;
      var col = DEPT_COLORS[p.department];
      tr.innerHTML =
        '<td><div class="person"><div class="avatar" aria-hidden="true" style="background:' + AVATAR_COLORS[p.idx % AVATAR_COLORS.length] + '">' + initials(p.name) + '</div>' +
          '<div><div class="person-name"></div><div class="person-email">' + slug(p.name) + '@orbit.example</div></div></div></td>' +
        '<td><span class="dept" style="background:' + col[0] + ';color:' + col[1] + '"></span></td>' +
        '<td class="role"></td>' +
        '<td class="num salary">' + fmtMoney(p.salary) + '</td>' +
        '<td class="start">' + fmtDate(p.start) + '</td>';
      tr.querySelector('.person-name').textContent = p.name;
      tr.querySelector('.dept').textContent = p.department;
      tr.querySelector('.role').textContent = p.role;
      tbody.appendChild(tr);
    });

    noRows.hidden = list.length > 0;
    document.getElementById('no-rows-term').textContent = state.filter.trim();
    rangeEl.textContent = list.length
      ? 'Showing ' + (start + 1) + '–' + (start + rows.length) + ' of ' + list.length
      : 'Showing 0 of 0';

    prevBtn.disabled = state.page <= 1;
    nextBtn.disabled = state.page >= pageCount;
    pageNumbers.innerHTML = '';
    for (var i = 1; i <= pageCount; i++) {
      var b = document.createElement('button');
      b.type = 'button';
      b.className = 'page-num';
      b.textContent = String(i);
      b.setAttribute('aria-label', 'Page ' + i);
      if (i === state.page) b.setAttribute('aria-current', 'page');
      b.dataset.page = String(i);
      b.addEventListener('click', function (e) {
        state.page = Number(e.currentTarget.dataset.page);
        update();
      });
      pageNumbers.appendChild(b);
    }

    headers.forEach(function (th) {
      var dir = th.dataset.key === state.sortKey ? state.sortDir : 'none';
      th.setAttribute('aria-sort', dir);
      var label = th.querySelector('.sort-btn').textContent.trim();
      th.querySelector('.sort-btn').setAttribute('aria-label',
        'Sort by ' + label + (dir === 'ascending' ? ', currently ascending' : dir === 'descending' ? ', currently descending' : ''));
    });

    app.dataset.page = String(state.page);
    app.dataset.pageCount = String(pageCount);
    app.dataset.pageSize = String(state.pageSize);
    app.dataset.sortKey = state.sortKey;
    app.dataset.sortDir = state.sortDir;
    app.dataset.filter = state.filter;
    app.dataset.visibleCount = String(list.length);
  }

  headers.forEach(function (th) {
    th.querySelector('.sort-btn').addEventListener('click', function () {
      var key = th.dataset.key;
      if (state.sortKey === key) {
        state.sortDir = state.sortDir === 'ascending' ? 'descending' : 'ascending';
      } else {
        state.sortKey = key;
        state.sortDir = 'ascending';
      }
      state.page = 1;
      update();
    });
  });

  prevBtn.addEventListener('click', function () { state.page--; update(); });
  nextBtn.addEventListener('click', function () { state.page++; update(); });
  pageSizeSelect.addEventListener('change', function () {
    state.pageSize = Number(pageSizeSelect.value);
    state.page = 1;
    update();
  });
  filterInput.addEventListener('input', function () {
    state.filter = filterInput.value;
    state.page = 1;
    update();
  });

  readHash();
  render();
})();
