/* benchlab: the compare page (pages/compare.py writes its index and one summary per value).

   Pick an axis (machine, build, revision), how to match (machines: each side at its best
   settings, or the exact same measurement), A and B: the page loads A's and B's summaries
   (bl/compare/<axis>-<i>.js: each measurement's row fields and, per metric, the side's n,
   mean and sd, and one run's samples) and computes the rows here, by the rule of
   query/compare.py (ARCHITECTURE.md, Compare): pairing, each side at its best for `best`,
   the speedup, and the mark (Welch's t on the runs, else on a one-run side's samples).
   Any two values can be compared. Every row is there: the filters (model, precision,
   machine, metric, changed only) act on all of them, the count says how many match, and the
   table pages through them 100 at a time. The picks, the filters, the sort and the page live
   in the URL hash, so a reload or a shared link shows the same table. No plotly here.
   User strings reach the DOM only through textContent. */
(function () {
  "use strict";
  var PAGE = 100;
  var MARKS = { "+": ["plus", "B better than A: significant at 5% (Welch's t on the runs, or on one run's samples)"],
    "-": ["minus", "B worse than A: significant at 5% (Welch's t on the runs, or on one run's samples)"],
    "~": ["same", "within noise: not significant at 5%"],
    "?": ["unknown", "one run a side and no samples: no spread to judge noise by"] };
  var SAMPLES_MIN_CHANGE = 0.01;  /* query/compare.py's: the least change marked on samples */
  var FILTERS = ["model", "precision", "machine", "metric"];

  var STYLE = [
    ".bl-mark{display:inline-block;min-width:1.5em;text-align:center;border-radius:1em;font-weight:700;padding:0 .35em}",
    ".bl-mark--plus{background:#e3f4e8;color:#1f6b3a}.bl-mark--minus{background:#fbe5e3;color:#9b2c25}",
    ".bl-mark--same{background:rgba(128,128,128,.15)}.bl-mark--unknown{background:rgba(128,128,128,.08);color:var(--md-default-fg-color--light,#6b7280)}",
    "[data-md-color-scheme=slate] .bl-mark--plus{background:#1e4d2e;color:#c9f0d6}[data-md-color-scheme=slate] .bl-mark--minus{background:#5c1f1b;color:#ffd9d5}",
    ".bl-cmp{max-width:100%;overflow-x:auto;margin:.6rem 0;border:1px solid var(--md-default-fg-color--lightest,#e5e7eb);border-radius:.3rem}",
    ".md-typeset table.bl-cmp__table{display:table;margin:0;font-size:.7rem;border:0;border-collapse:separate;border-spacing:0;min-width:100%;background:var(--md-default-bg-color,#fff)}",
    ".md-typeset .bl-cmp__table th,.md-typeset .bl-cmp__table td{padding:.35em .6em;vertical-align:top;border-bottom:1px solid var(--md-default-fg-color--lightest,#e5e7eb);text-align:left}",
    ".md-typeset .bl-cmp__table th{cursor:pointer;user-select:none;white-space:nowrap;font-weight:700;background:var(--md-default-bg-color,#fff)}",
    ".md-typeset .bl-cmp__table th[aria-sort=ascending]::after{content:' \\25B2';font-size:.8em}",
    ".md-typeset .bl-cmp__table th[aria-sort=descending]::after{content:' \\25BC';font-size:.8em}",
    ".md-typeset .bl-cmp__table .bl-num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}",
    ".md-typeset .bl-cmp__table .bl-sticky{position:sticky;left:0;z-index:1;background:var(--md-default-bg-color,#fff)}",
    ".md-typeset .bl-cmp__table td[data-key=model]{min-width:7.5rem;max-width:12rem;overflow-wrap:anywhere}",
    ".md-typeset .bl-cmp__table .bl-sticky--last{box-shadow:inset -1px 0 0 var(--md-default-fg-color--lighter,#d1d5db)}",
    ".bl-cmp__sub{display:block;font-size:.85em;color:var(--md-default-fg-color--light,#6b7280);white-space:nowrap}",
    ".bl-cmp__settings{white-space:nowrap}",
    ".bl-compare__count{font-size:.75rem;font-weight:600;margin:.2rem 0}",
    ".bl-pager{display:flex;gap:.6rem;align-items:center;font-size:.75rem}",
    ".bl-pager button,.bl-compare select{font:inherit}",
    ".bl-pager button{padding:.15rem .6rem;border-radius:1em;cursor:pointer;border:1px solid var(--md-default-fg-color--lighter,#d1d5db);background:var(--md-default-bg-color,#fff);color:var(--md-default-fg-color,#1f2937)}",
    ".bl-pager button[disabled]{opacity:.4;cursor:default}",
    "@media (max-width:600px){",
    ".bl-cmp{border:0;overflow-x:visible}",
    ".md-typeset table.bl-cmp__table,.md-typeset .bl-cmp__table tbody{display:block;width:100%}",
    ".md-typeset .bl-cmp__table thead{display:none}",
    ".md-typeset .bl-cmp__table tr{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:.2rem .8rem;padding:.5rem .2rem;border-bottom:2px solid var(--md-default-fg-color--lightest,#e5e7eb)}",
    ".md-typeset .bl-cmp__table td.bl-num{text-align:left}",
    ".md-typeset .bl-cmp__table td[data-key=model]{order:0}.md-typeset .bl-cmp__table td[data-key=machine]{order:1}",
    ".md-typeset .bl-cmp__table td[data-key=precision]{order:2}.md-typeset .bl-cmp__table td[data-key=test]{order:3}",
    ".md-typeset .bl-cmp__table td[data-key=mark]{order:4}.md-typeset .bl-cmp__table td{order:5}",
    ".md-typeset .bl-cmp__table td[data-key=a]{order:6}.md-typeset .bl-cmp__table td[data-key=b]{order:7}.md-typeset .bl-cmp__table td[data-key=speedup]{order:8}",
    ".md-typeset .bl-cmp__table td,.md-typeset .bl-cmp__table td.bl-sticky{position:static;display:block;border:0;padding:0;text-align:left;white-space:normal;max-width:none;min-width:0;box-shadow:none}",
    ".md-typeset .bl-cmp__table td[data-key=model],.md-typeset .bl-cmp__table td[data-key=settings]{grid-column:1/-1}",
    ".md-typeset .bl-cmp__table td[data-key=model]{font-weight:700}",
    ".md-typeset .bl-cmp__table td::before{content:attr(data-label);display:block;font-size:.8em;color:var(--md-default-fg-color--light,#6b7280)}",
    ".md-typeset .bl-cmp__table td[data-key=model]::before{display:none}",
    ".bl-cmp__settings,.bl-cmp__sub{white-space:normal}}"
  ].join("\n");

  /* The site script's helpers (benchlab.js, loaded before this one on every page). */
  function ui() { return window.BENCHLAB_UI; }
  function el(tag, text, attrs) { return ui().el(tag, text, attrs); }
  function loadScript(src) { return ui().loadScript(src); }
  function fmt(value, digits) { return ui().fmt(value, digits); }

  /* --- the URL hash, key=value&key=value (the other keys are kept) --------------------- */

  function hashState() {
    var state = {};
    var text = window.location.hash.replace(/^#/, "");
    if (text.indexOf("=") < 0) { return state; }
    text.split("&").forEach(function (part) {
      var kv = part.split("=");
      if (kv.length === 2) { state[decodeURIComponent(kv[0])] = decodeURIComponent(kv[1]); }
    });
    return state;
  }

  function setHash(changes) {
    var state = hashState();
    Object.keys(changes).forEach(function (k) { state[k] = changes[k]; });
    var parts = Object.keys(state).sort().filter(function (k) { return state[k]; })
      .map(function (k) { return encodeURIComponent(k) + "=" + encodeURIComponent(state[k]); });
    var url = window.location.href.split("#")[0] + (parts.length ? "#" + parts.join("&") : "");
    try { window.history.replaceState(null, "", url); } catch (e) { window.location.hash = parts.join("&"); }
  }

  /* --- rows as the reader sees them: A and B in the order picked ----------------------- */

  function oriented(r) {
    var o = { model: r.model, machine: r.machine_id || "", precision: r.precision, backend: r.backend || "",
      threads: r.threads, shape: r.shape || "", test: r.test, metric: r.metric, unit: r.unit || "",
      lower: r.better === "lower", speedup: r.speedup, mark: r.mark };
    ["a", "b"].forEach(function (side) {
      o[side] = r[side]; o["pm_" + side] = r["pm_" + side]; o["n_" + side] = r["n_" + side];
      o["link_" + side] = r["link_" + side]; o["settings_" + side] = r["settings_" + side];
    });
    o.metricLabel = o.unit + (o.lower ? ", lower is better" : "");
    return o;
  }

  /* --- a pair, as query/compare.py's compare_pair computes it ---------------------------- */

  function tq(t, df) { return df <= t.length - 1 ? t[df - 1] : t[t.length - 1]; }

  function sideOf(item) {
    /* [metric index, n, mean, sd, test(, samples' n, mean, sd)] */
    if (!item) { return null; }
    return { n: item[1], mean: item[2], sd: item[3], test: item[4],
      samples: item.length > 5 ? { n: item[5], mean: item[6], sd: item[7] } : null };
  }

  function evidence(side) {
    if (side.n >= 2) { return [side.n, side.mean, side.sd]; }
    if (side.samples) { return [side.samples.n, side.samples.mean, side.samples.sd]; }
    return [1, side.mean, null];
  }

  function differs(t, a, b) {
    /* Welch's t at 5% two-sided; against a single value, outside the other's 95% interval. */
    if (a[0] < 2 || a[2] === null) { var swap = a; a = b; b = swap; }
    if (b[0] < 2 || b[2] === null) { return Math.abs(b[1] - a[1]) > tq(t, a[0] - 1) * a[2] / Math.sqrt(a[0]); }
    var va = a[2] * a[2] / a[0], vb = b[2] * b[2] / b[0];
    if (va + vb === 0) { return a[1] !== b[1]; }
    var stat = Math.abs(b[1] - a[1]) / Math.sqrt(va + vb);
    var df = Math.pow(va + vb, 2) / (Math.pow(va, 2) / (a[0] - 1) + Math.pow(vb, 2) / (b[0] - 1));
    return stat > tq(t, Math.max(1, Math.floor(df)));
  }

  function significance(t, lower, a, b) {
    if (!a || !b) { return null; }
    var ea = evidence(a), eb = evidence(b);
    if ((ea[0] < 2 || ea[2] === null) && (eb[0] < 2 || eb[2] === null)) { return "?"; }
    var onSamples = (a.n < 2 && ea[0] >= 2) || (b.n < 2 && eb[0] >= 2);
    if (onSamples && Math.abs(eb[1] - ea[1]) < SAMPLES_MIN_CHANGE * Math.abs(ea[1])) { return "~"; }
    if (!differs(t, ea, eb)) { return "~"; }
    return (lower ? eb[1] < ea[1] : eb[1] > ea[1]) ? "+" : "-";
  }

  function halfWidth(t, side) {
    if (!side || side.n < 2 || side.sd === null) { return null; }
    return tq(t, side.n - 1) * side.sd / Math.sqrt(side.n);
  }

  function speedupOf(lower, a, b) {
    if (!a || b === null || b === undefined) { return null; }
    if (lower) { return b ? a / b : null; }
    return b / a;
  }

  function itemOf(m, metric) {
    for (var i = 0; i < m.v.length; i++) { if (m.v[i][0] === metric) { return m.v[i]; } }
    return null;
  }

  function pickBest(group, metric, lower) {
    /* The measurement with the best level for the metric, the first of equal bests. */
    var best = [group[0], null];
    group.forEach(function (m) {
      var side = sideOf(itemOf(m, metric));
      if (!side) { return; }
      var held = best[1];
      if (!held || (lower ? side.mean < held.mean : side.mean > held.mean)) { best = [m, side]; }
    });
    return best;
  }

  function settingsLabel(m, other) {
    return (m.s || []).filter(function (part, i) {
      if (part[0] === "threads") { return true; }
      var theirs = null;
      (other.s || []).forEach(function (p) { if (p[0] === part[0]) { theirs = p[2]; } });
      return part[2] !== (theirs === null ? "null" : theirs);
    }).map(function (part) { return part[1]; }).join(", ");
  }

  function rowOrder(x, y) {
    var a = [x.model, x.precision, x.machine_id || "", x.backend || "", x.threads === null || x.threads === undefined ? -1 : x.threads, x.shape || "", x.mi, x.test];
    var b = [y.model, y.precision, y.machine_id || "", y.backend || "", y.threads === null || y.threads === undefined ? -1 : y.threads, y.shape || "", y.mi, y.test];
    for (var i = 0; i < a.length; i++) { if (a[i] < b[i]) { return -1; } if (a[i] > b[i]) { return 1; } }
    return 0;
  }

  function comparePair(index, axis, match, dataA, dataB) {
    var keyOf = match === "best" ? "g" : "k";
    function groups(data) {
      var out = {};
      data.m.forEach(function (m) { (out[m[keyOf]] = out[m[keyOf]] || []).push(m); });
      return out;
    }
    var ga = groups(dataA), gb = groups(dataB), rows = [], onlyA = 0, onlyB = 0;
    Object.keys(gb).forEach(function (k) { if (!ga[k]) { onlyB += 1; } });
    Object.keys(ga).forEach(function (k) {
      if (!gb[k]) { onlyA += 1; return; }
      index.metrics.forEach(function (info, mi) {
        var lower = info[2];
        var pa = pickBest(ga[k], mi, lower), pb = pickBest(gb[k], mi, lower);
        if (!pa[1] && !pb[1]) { return; }
        var ma = pa[0], mb = pb[0], sa = pa[1], sb = pb[1];
        var test = sa ? sa.test : (ma.t || {})[String(mi)] || index.labels[mi];
        var va = sa ? sa.mean : null, vb = sb ? sb.mean : null;
        var row = { model: ma.f[0], machine_id: axis !== "machine" ? ma.f[1] : null, precision: ma.f[2],
          backend: ma.f[3], threads: match === "exact" ? ma.f[4] : null,
          shape: (match === "exact" ? ma.f[5] : ma.f[6]) || null, test: test, metric: info[0], mi: mi,
          unit: info[1], better: lower ? "lower" : "higher", a: va, b: vb,
          speedup: speedupOf(lower, va, vb), mark: significance(index.t, lower, sa, sb),
          pm_a: halfWidth(index.t, sa), pm_b: halfWidth(index.t, sb),
          n_a: sa ? sa.n : null, n_b: sb ? sb.n : null, link_a: ma.u, link_b: mb.u };
        if (match === "best") { row.settings_a = settingsLabel(ma, mb); row.settings_b = settingsLabel(mb, ma); }
        rows.push(row);
      });
    });
    rows.sort(rowOrder);
    return { rows: rows, only_a: onlyA, only_b: onlyB };
  }

  /* What the Chromium tests read to hold the page to `bench compare` (any pair). */
  window.BENCHLAB_COMPARE = { comparePair: comparePair };

  function columns(axis, match, rows) {
    var cols = [{ key: "model", label: "Model", sticky: true }];
    if (axis !== "machine") { cols.push({ key: "machine", label: "Machine", sticky: true }); }
    cols.push({ key: "precision", label: "Precision" });
    var backends = {};
    rows.forEach(function (r) { backends[r.backend] = true; });
    if (Object.keys(backends).length > 1) { cols.push({ key: "backend", label: "Backend" }); }
    if (match === "best") {
      cols.push({ key: "settings", label: "Settings (A, B)", value: function (r) { return r.settings_a + " · " + r.settings_b; } });
    } else {
      cols.push({ key: "threads", label: "Threads", num: true }, { key: "shape", label: "Shape" });
    }
    cols.push({ key: "test", label: "Test", value: function (r) { return r.test + " " + r.metric; } },
      { key: "a", label: "A", num: true }, { key: "b", label: "B", num: true },
      { key: "mark", label: "Change", value: function (r) { return "+~?-".indexOf(r.mark || "?"); } },
      { key: "speedup", label: "Speedup", num: true });
    return cols;
  }

  function sortRows(rows, col, dir) {
    if (!col) { return rows; }
    var get = col.value || function (r) { return r[col.key]; };
    var sign = dir === "asc" ? 1 : -1;
    return rows.map(function (r, i) { return [get(r), i, r]; }).sort(function (x, y) {
      var a = x[0], b = y[0];
      var emptyA = a === null || a === undefined || a === "", emptyB = b === null || b === undefined || b === "";
      if (emptyA || emptyB) { return emptyA === emptyB ? x[1] - y[1] : emptyA ? 1 : -1; }
      if (typeof a === "string") { a = a.toLowerCase(); b = String(b).toLowerCase(); }
      return a < b ? -sign : a > b ? sign : x[1] - y[1];
    }).map(function (t) { return t[2]; });
  }

  function valueCell(td, r, side) {
    var text = fmt(r[side], 2);
    if (r["link_" + side]) { td.appendChild(el("a", text, { href: r["link_" + side] })); } else { td.appendChild(document.createTextNode(text)); }
    var n = r["n_" + side];
    if (n) { td.appendChild(el("span", (r["pm_" + side] ? "± " + fmt(r["pm_" + side], 2) + " · " : "") + "n=" + n, { "class": "bl-cmp__sub" })); }
    td.setAttribute("data-v", r[side] === null || r[side] === undefined ? "" : String(r[side]));
  }

  function cell(tr, col, r) {
    var td = tr.insertCell();
    td.setAttribute("data-label", col.label);
    td.setAttribute("data-key", col.key);
    if (col.num) { td.className = "bl-num"; }
    if (col.key === "a" || col.key === "b") { valueCell(td, r, col.key); return td; }
    if (col.key === "mark") {
      var mark = MARKS[r.mark];
      if (mark) { td.appendChild(el("span", r.mark, { "class": "bl-mark bl-mark--" + mark[0], title: mark[1], "aria-label": mark[1] })); } else { td.textContent = "–"; }
      return td;
    }
    if (col.key === "speedup") { td.textContent = r.speedup === null || r.speedup === undefined ? "–" : fmt(r.speedup, 2) + "×"; return td; }
    if (col.key === "test") {
      td.appendChild(document.createTextNode(r.test));
      td.appendChild(el("span", r.metricLabel, { "class": "bl-cmp__sub", title: r.metric }));
      return td;
    }
    if (col.key === "settings") {
      td.className = "bl-cmp__settings";
      td.appendChild(el("div", "A: " + r.settings_a));
      td.appendChild(el("div", "B: " + r.settings_b));
      return td;
    }
    var value = r[col.key];
    td.textContent = value === null || value === undefined || value === "" ? "–" : String(value);
    return td;
  }

  /* --- the page ------------------------------------------------------------------------ */

  function start() {
    var box = document.getElementById("bl-compare");
    var index = ((window.BENCHLAB_CMP_INDEX || {}).index) || null;
    if (!box || !index || !index.axes.length) { return; }
    document.head.appendChild(el("style", STYLE));
    function q(name) { return box.querySelector("[data-compare=" + name + "]"); }
    var pick = { axis: q("axis"), match: q("match"), a: q("a"), b: q("b") };
    var filt = { model: q("f-model"), precision: q("f-precision"), machine: q("f-machine"), metric: q("f-metric") };
    var changedOnly = q("f-changed"), sortPick = q("sort");
    var note = q("note"), count = q("count"), target = q("table"), pager = q("pager");
    var byAxis = {};
    var view = { rows: [], cols: [], axis: null, match: null };
    index.axes.forEach(function (entry) {
      byAxis[entry.axis] = entry;
      pick.axis.appendChild(el("option", entry.axis, { value: entry.axis }));
    });

    function fillPicks(axis, state) {
      var entry = byAxis[axis];
      pick.match.textContent = "";
      entry.modes.forEach(function (m) {
        pick.match.appendChild(el("option", m === "best" ? "best settings" : "exact", { value: m }));
      });
      pick.match.value = entry.modes.indexOf(state.match) >= 0 ? state.match : entry.modes[0];
      q("match-box").style.display = entry.modes.length > 1 ? "" : "none";
      q("f-machine-box").style.display = axis === "machine" ? "none" : "";
      ["a", "b"].forEach(function (k) {
        pick[k].textContent = "";
        entry.values.forEach(function (v, i) { pick[k].appendChild(el("option", v, { value: String(i) })); });
      });
      /* Machines: the first two; builds and revisions: the newest two. */
      var last = entry.values.length - 1;
      var def = axis === "machine" ? [0, 1] : [last - 1, last];
      var ia = entry.values.indexOf(state.a), ib = entry.values.indexOf(state.b);
      pick.a.value = String(ia >= 0 ? ia : def[0]);
      pick.b.value = String(ib >= 0 ? ib : def[1]);
    }

    function fillFilters(rows, state) {
      FILTERS.forEach(function (name) {
        var select = filt[name];
        var seen = {};
        rows.forEach(function (r) {
          var v = name === "metric" ? r.metric : r[name];
          if (v) { seen[v] = name === "metric" ? r.test + " · " + r.metricLabel + " (" + r.metric + ")" : v; }
        });
        var wanted = state[name] || "";
        if (wanted && !seen[wanted]) { seen[wanted] = wanted; }
        select.textContent = "";
        select.appendChild(el("option", "All", { value: "" }));
        Object.keys(seen).sort().forEach(function (v) { select.appendChild(el("option", seen[v], { value: v })); });
        select.value = wanted;
      });
      changedOnly.checked = state.changed === "1";
    }

    function kept() {
      var want = {};
      FILTERS.forEach(function (name) { if (filt[name].value) { want[name] = filt[name].value; } });
      return view.rows.filter(function (r) {
        for (var name in want) {
          if (String(r[name]) !== want[name]) { return false; }
        }
        return !changedOnly.checked || r.mark === "+" || r.mark === "-";
      });
    }

    function draw() {
      var state = hashState();
      var sort = (state.sort || "").split(":");
      var col = null;
      view.cols.forEach(function (c) { if (c.key === sort[0]) { col = c; } });
      var dir = sort[1] === "asc" ? "asc" : "desc";
      var rows = sortRows(kept(), col, dir);
      sortPick.value = col ? col.key + ":" + dir : "";
      var changes = view.rows.filter(function (r) { return r.mark === "+" || r.mark === "-"; }).length;
      var pages = Math.max(1, Math.ceil(rows.length / PAGE));
      var page = Math.min(Math.max(1, parseInt(state.page || "1", 10) || 1), pages);
      var shown = rows.slice((page - 1) * PAGE, page * PAGE);
      target.textContent = "";
      pager.textContent = "";
      if (!rows.length) {
        count.textContent = "";
        target.appendChild(el("p", "No row matches these filters (" + view.rows.length + " rows in all, " +
          changes + " of them changed). Set a filter back to All to see more.", { "class": "bl-callout bl-callout--empty", "data-compare": "empty" }));
        return;
      }
      count.textContent = (rows.length === view.rows.length ? rows.length + " rows" : rows.length + " of " + view.rows.length + " rows") +
        " (" + changes + " changed in all)" + (pages > 1 ? "; showing " + ((page - 1) * PAGE + 1) + "–" + ((page - 1) * PAGE + shown.length) : "") + ".";
      var wrap = el("div", null, { "class": "bl-cmp" });
      var table = el("table", null, { "class": "bl-cmp__table" });
      var head = table.createTHead().insertRow();
      view.cols.forEach(function (c) {
        var th = el("th", c.label, { tabindex: "0", scope: "col", "data-key": c.key,
          "aria-sort": col === c ? (dir === "asc" ? "ascending" : "descending") : "none" });
        if (c.num) { th.className = "bl-num"; }
        function go() {
          var next = col === c ? (dir === "asc" ? "desc" : "asc") : (c.num ? "desc" : "asc");
          setHash({ sort: c.key + ":" + next, page: "" });
          draw();
        }
        th.addEventListener("click", go);
        th.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(); } });
        head.appendChild(th);
      });
      var body = table.createTBody();
      shown.forEach(function (r) {
        var tr = body.insertRow();
        view.cols.forEach(function (c) { cell(tr, c, r); });
      });
      wrap.appendChild(table);
      target.appendChild(wrap);
      stick(table);
      if (pages > 1) {
        var prev = el("button", "‹ Previous", { type: "button" }), next = el("button", "Next ›", { type: "button" });
        prev.disabled = page <= 1; next.disabled = page >= pages;
        prev.addEventListener("click", function () { setHash({ page: String(page - 1) }); draw(); });
        next.addEventListener("click", function () { setHash({ page: String(page + 1) }); draw(); });
        pager.appendChild(prev);
        pager.appendChild(el("span", "Page " + page + " of " + pages));
        pager.appendChild(next);
      }
    }

    function stick(table) {
      /* Model (and Machine) stay in view while the rest scrolls sideways. */
      var sticky = [];
      view.cols.forEach(function (c, i) { if (c.sticky) { sticky.push(i); } });
      var left = 0;
      sticky.forEach(function (i, n) {
        var cells = Array.prototype.map.call(table.rows, function (row) { return row.cells[i]; });
        cells.forEach(function (c) {
          c.classList.add("bl-sticky");
          if (n === sticky.length - 1) { c.classList.add("bl-sticky--last"); }
          c.style.left = left + "px";
        });
        left += cells[0].offsetWidth;
      });
    }

    function show(fromUser) {
      var axis = pick.axis.value, entry = byAxis[axis], match = pick.match.value;
      var i = parseInt(pick.a.value, 10), j = parseInt(pick.b.value, 10);
      var state = hashState();
      setHash({ by: axis, match: match, a: entry.values[i], b: entry.values[j], page: fromUser ? "" : state.page });
      target.textContent = ""; count.textContent = ""; pager.textContent = "";
      if (i === j) { note.textContent = "Pick two different values."; return; }
      var names = [axis + "-" + i, axis + "-" + j];
      Promise.all(names.map(function (name) { return loadScript("bl/compare/" + name + ".js"); })).then(function () {
        var data = comparePair(index, axis, match, window.BENCHLAB_CMP[names[0]], window.BENCHLAB_CMP[names[1]]);
        var a = entry.values[i], b = entry.values[j];
        if (!data.rows.length) {
          note.textContent = "These two share no " + (match === "best" ? "model, precision and test." : "measurement.");
          view.rows = [];
          return;
        }
        note.textContent = axis + ": A = " + a + ", B = " + b + (match === "best" ? ", each at its best settings" : "") +
          ". Speedup is how many times better B is (B/A, or A/B where lower is better); " +
          data.only_a + " only under A and " + data.only_b + " only under B are not compared.";
        view.rows = data.rows.map(oriented);
        view.cols = columns(axis, match, view.rows);
        view.axis = axis; view.match = match;
        sortPick.textContent = "";
        sortPick.appendChild(el("option", "as listed", { value: "" }));
        view.cols.forEach(function (c) {
          sortPick.appendChild(el("option", c.label + " ▲", { value: c.key + ":asc" }));
          sortPick.appendChild(el("option", c.label + " ▼", { value: c.key + ":desc" }));
        });
        fillFilters(view.rows, hashState());
        draw();
      }, function (e) { note.textContent = String(e.message); });
    }

    function filtered() {
      var changes = { page: "", changed: changedOnly.checked ? "1" : "" };
      FILTERS.forEach(function (name) { changes[name] = filt[name].value; });
      setHash(changes);
      draw();
    }

    var state = hashState();
    var first = byAxis[state.by] ? state.by : index.axes[0].axis;
    pick.axis.value = first;
    fillPicks(first, state);
    pick.axis.addEventListener("change", function () { fillPicks(pick.axis.value, {}); show(true); });
    pick.match.addEventListener("change", function () { show(true); });
    pick.a.addEventListener("change", function () { show(true); });
    pick.b.addEventListener("change", function () { show(true); });
    FILTERS.forEach(function (name) { filt[name].addEventListener("change", filtered); });
    changedOnly.addEventListener("change", filtered);
    sortPick.addEventListener("change", function () { setHash({ sort: sortPick.value, page: "" }); draw(); });
    show(false);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
