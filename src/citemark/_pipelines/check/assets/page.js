(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('data').textContent);
  var texts = data.texts, rows = data.rows, size = data.page;
  var main = document.getElementById('rows');
  var pager = document.getElementById('pager');
  var strip = document.getElementById('strip');
  var boxes = Array.prototype.slice.call(
    document.querySelectorAll('#filters input[name="outcome"]'));
  var chooser = document.getElementById('group');
  var labels = Array.prototype.slice.call(document.querySelectorAll('#filters span[data-shown]'));
  var cards = Array.prototype.slice.call(document.querySelectorAll('dd[data-card]'));
  var scope = document.getElementById('scope');
  var KINDS = ['resolved', 'fabricated', 'ambiguous', 'ignored'];
  var OUTCOMES = ['failed', 'unassessed', 'passed'];
  var NAMES = data.names || {};
  var SUPPORT = [['entailed', 'supported'], ['not_entailed', 'not supported'],
    ['unjudged', 'unjudged'], ['not_asked', 'not asked']];
  rows.forEach(function (r) { r[2] = OUTCOMES[r[2]]; });
  var visible = [], page = 0;

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = text; }
    return node;
  }

  function renderRow(r) {
    var line = r[0], id = r[1], outcome = r[2], prefix = 'row-' + line;
    var sec = el('section', 'row ' + outcome);
    sec.id = prefix;
    sec.setAttribute('data-outcome', outcome);
    var head = el('header');
    var title = texts[r[13]];
    head.appendChild(el('span', 'badge ' + outcome, NAMES[outcome] || outcome));
    head.appendChild(document.createTextNode(' '));
    head.appendChild(el('span', 'rid', title));
    if (id !== null && id !== title) {
      head.appendChild(document.createTextNode(' '));
      head.appendChild(el('code', 'id', id));
    }
    if (title !== 'line ' + line) {
      head.appendChild(document.createTextNode(' '));
      head.appendChild(el('span', 'line', 'line ' + line));
    }
    r[6].forEach(function (code) {
      head.appendChild(document.createTextNode(' '));
      head.appendChild(el('code', 'finding', texts[code]));
    });
    sec.appendChild(head);
    var cols = el('div', 'cols'), left = el('div', 'main');
    if (r[3] !== null) {
      var q = el('p', 'question');
      q.appendChild(el('span', 'k', 'Q'));
      q.appendChild(document.createTextNode(' ' + texts[r[3]]));
      left.appendChild(q);
    }
    var answer = el('div', 'answer');
    r[4].forEach(function (piece) {
      if (typeof piece === 'string') {
        answer.appendChild(document.createTextNode(piece));
        return;
      }
      var kind = KINDS[piece[0]], marker;
      if (piece[0] === 4) {
        marker = el('a', 'pcite ' + (piece[3] ? 'ok' : 'bad'), piece[2]);
        marker.href = '#' + prefix + '-pc-' + piece[1];
        marker.title = 'provider citation ' + piece[1] + (piece[3] ? ': verified' : ': failed');
      } else if (kind === 'ignored') {
        marker = el('span', 'marker ignored', piece[2]);
        marker.title = texts[piece[1]];
      } else {
        marker = el('a', 'marker ' + kind, piece[2]);
        marker.title = kind === 'resolved' ? 'cites source ' + piece[1] : kind;
        if (kind === 'resolved' && piece.length > 3 && SUPPORT[piece[3]]) {
          marker.className += ' support-' + SUPPORT[piece[3]][0];
          marker.setAttribute('data-support', SUPPORT[piece[3]][0]);
          marker.title += '; support (advisory): ' + SUPPORT[piece[3]][1];
        }
        marker.href = '#' + prefix + (kind === 'resolved' ? '-src-' + piece[1]
          : piece[1] ? '-issue-' + piece[1] : '-issues');
      }
      answer.appendChild(marker);
    });
    left.appendChild(answer);
    left.appendChild(el('p', 'explanation', texts[r[5]]));
    if (r[14]) {
      var fig = function (v) { return v === null ? 'n/a' : v.toFixed(2); };
      left.appendChild(el('p', 'support', 'support (advisory): citation recall ' +
        fig(r[14][0]) + ', precision ' + fig(r[14][1])));
      if (r[14][2].length) {
        var moved = el('ul', 'reattributed');
        r[14][2].forEach(function (m) {
          moved.appendChild(el('li', null, 'sentence ' + m[0] + ': [' + m[1] +
            '] not supported alone; supported by ' +
            m[2].map(function (k) { return '[' + k + ']'; }).join(' ')));
        });
        left.appendChild(moved);
      }
    }
    for (var n = 0, pc = 0; n < r[9].length; n += 2) {
      var note = el('p', texts[r[9][n]], texts[r[9][n + 1]]);
      if (texts[r[9][n]].indexOf('provider-citation') === 0) {
        pc += 1;
        note.id = prefix + '-pc-' + pc;
      }
      left.appendChild(note);
    }
    if (r[7].length) {
      var issues = el('ul', 'issues');
      issues.id = prefix + '-issues';
      r[7].forEach(function (issue, j) {
        var li = el('li', issue[1]);
        li.id = prefix + '-issue-' + (j + 1);
        li.appendChild(el('code', null, issue[0]));
        li.appendChild(document.createTextNode(' ' + issue[1] + ': ' + texts[issue[2]]));
        issues.appendChild(li);
      });
      left.appendChild(issues);
    }
    cols.appendChild(left);
    var side = el('div', 'sources');
    side.appendChild(el('p', 'src-title', texts[r[10]]));
    var list = el('ol');
    for (var s = 0; s < r[8].length; s += 3) {
      var k = r[8][s], cited = k < 0;
      if (cited) { k = ~k; }
      var li = el('li', cited ? 'source cited' : 'source');
      li.id = prefix + '-src-' + k;
      var det = el('details');
      if (cited) { det.open = true; }
      det.appendChild(el('summary', 'src-meta', texts[r[8][s + 1]]));
      det.appendChild(el('div', 'span', texts[r[8][s + 2]]));
      li.appendChild(det);
      list.appendChild(li);
    }
    side.appendChild(list);
    r[11].forEach(function (more) { side.appendChild(el('p', 'excluded', texts[more])); });
    cols.appendChild(side);
    sec.appendChild(cols);
    return sec;
  }

  function draw() {
    var pages = Math.max(1, Math.ceil(visible.length / size));
    page = Math.min(Math.max(page, 0), pages - 1);
    var frag = document.createDocumentFragment();
    visible.slice(page * size, (page + 1) * size).forEach(function (i) {
      frag.appendChild(renderRow(rows[i]));
    });
    main.textContent = '';
    main.appendChild(frag);
    pager.textContent = '';
    var prev = el('button', 'prev', '\u2190 previous'), next = el('button', 'next', 'next \u2192');
    prev.type = next.type = 'button';
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
    prev.addEventListener('click', function () { page -= 1; draw(); });
    next.addEventListener('click', function () { page += 1; draw(); });
    var first = visible.length ? page * size + 1 : 0;
    var last = Math.min((page + 1) * size, visible.length);
    pager.appendChild(prev);
    pager.appendChild(el('span', 'where', 'rows ' + first + '\u2013' + last + ' of ' +
      visible.length + ' (page ' + (page + 1) + ' of ' + pages + ')'));
    pager.appendChild(next);
  }

  function filter() {
    var shown = {};
    boxes.forEach(function (box) { shown[box.value] = box.checked; });
    var group = chooser ? chooser.value : '';
    visible = [];
    var seen = {failed: 0, unassessed: 0, passed: 0};
    rows.forEach(function (r, i) {
      if (shown[r[2]] && (group === '' || texts[r[12]] === group)) {
        visible.push(i);
        seen[r[2]] += 1;
      }
    });
    count(group, seen);
    page = 0;
    draw();
  }

  // The filter labels say how many rows of each outcome are drawn now, of how many
  // the run (or the chosen group) has; the count cards show the chosen group's counts.
  function count(group, seen) {
    var totals = data.totals[group] || data.totals[''];
    labels.forEach(function (label) {
      var o = label.getAttribute('data-shown');
      label.textContent = '(' + seen[o] + ' shown of ' + totals[o] + ')';
    });
    var values = data.cards[group] || data.cards[''];
    cards.forEach(function (card) {
      var key = card.getAttribute('data-card');
      var value = values[key];
      card.textContent = value === undefined ? '\u2013' : String(value);
    });
    if (scope) {
      scope.textContent = group === '' ? 'Counts of every row.' : 'Counts of the group ' + group +
        ' (unreadable lines belong to no group).';
    }
  }

  function follow() {
    var m = /^#row-(\d+)/.exec(window.location.hash);
    if (!m) { return; }
    var line = Number(m[1]);
    var at = -1;
    visible.forEach(function (i, k) { if (rows[i][0] === line) { at = k; } });
    if (at < 0) { return; }
    page = Math.floor(at / size);
    draw();
    var target = document.getElementById(window.location.hash.slice(1));
    if (target) { target.scrollIntoView(); }
  }

  // '#show=failed,unassessed' sets the outcome boxes, '#group=NAME' (URI-encoded)
  // the group menu; both may be given, joined by '&'.
  function choose() {
    var asked = false;
    window.location.hash.slice(1).split('&').forEach(function (part) {
      var eq = part.indexOf('='), key = part.slice(0, eq), value = part.slice(eq + 1);
      if (eq < 0) { return; }
      if (key === 'show' && /^[a-z,]*$/.test(value)) {
        var names = value.split(',');
        boxes.forEach(function (box) { box.checked = names.indexOf(box.value) >= 0; });
        asked = true;
      } else if (key === 'group' && chooser) {
        var name;
        try { name = decodeURIComponent(value); } catch (e) { return; }
        Array.prototype.forEach.call(chooser.options, function (option) {
          if (option.value === name) { chooser.value = name; asked = true; }
        });
      }
    });
    return asked;
  }

  choose();
  boxes.forEach(function (box) { box.addEventListener('change', filter); });
  if (chooser) { chooser.addEventListener('change', filter); }
  var cells = document.createDocumentFragment();
  rows.slice().sort(function (a, b) { return a[0] - b[0]; }).forEach(function (r) {
    var cell = el('a', 'cell ' + r[2]);
    cell.href = '#row-' + r[0];
    cell.title = 'line ' + r[0] + ': ' + (NAMES[r[2]] || r[2]);
    cells.appendChild(cell);
  });
  strip.appendChild(cells);
  filter();
  follow();
  window.addEventListener('hashchange', function () {
    if (choose()) { filter(); } else { follow(); }
  });
  document.documentElement.classList.add('filtered');
  document.documentElement.setAttribute('data-ready-ms', performance.now().toFixed(0));
})();
