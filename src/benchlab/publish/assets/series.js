/* benchlab: the one series page. `series.html?s=<series id>` loads bl/series/<id>.js and
   draws that series: its charts (through benchlab.js's renderer, so theme, phone layout and
   "click a point: its run page" are the other charts'), its current level with MBU and MFU
   and the physics check's badges, the newest run's gate verdict, unstable and outlier
   notes, its steps and runs tables and its identity.
   Without an id it lists every series (bl/series/index.js) with a filter box.
   User strings reach the DOM through textContent; the two tables come as HTML the build
   escaped cell by cell (the same HTML other pages carry). Loads scripts only (works from
   file://). */
(function () {
  "use strict";
  var SERIES_ID = /^s[0-9a-f]{12}$/;

  function ui() { return window.BENCHLAB_UI; }

  function el(tag, text, attrs) { return ui().el(tag, text, attrs); }

  function link(text, href) { return el("a", text, { href: href }); }

  function fmt(value, digits) { return ui().fmt(value, digits); }

  function badge(text, kind, title) {
    return el("span", text, { "class": "bl-badge bl-badge--" + kind, title: title || text });
  }

  function lead(data) {
    var p = el("p", null, { "class": "bl-lead" });
    p.appendChild(document.createTextNode("One measurement followed over time and across builds: " +
      data.count + " successful run(s) on "));
    p.appendChild(link(data.machine.text, data.machine.href));
    p.appendChild(document.createTextNode(" of "));
    p.appendChild(link(data.model.text, data.model.href));
    p.appendChild(document.createTextNode(data.version ? ", newest on " + data.version + " (" : ", newest version not recorded ("));
    p.appendChild(link("newest run", data.newest.href));
    p.appendChild(document.createTextNode("). Click a point for its run."));
    return p;
  }

  function verdicts(data) {
    /* The newest run's gate verdict, the series' level and what makes it less sure. */
    var p = el("p", null, { "class": "bl-series-facts" });
    var level = data.level;
    /* A level for each metric the series carries, each its own history's newest segment. */
    var levels = data.levels && data.levels.length ? data.levels : (level ? [level] : []);
    levels.forEach(function (lv, i) {
      var text = (i ? "; " : "Current level: ") + (levels.length > 1 ? (lv.name || lv.metric) + " " : "") +
        fmt(lv.value, 2) + " " + (lv.unit || "tok/s") +
        (lv.pm !== null ? " ± " + fmt(lv.pm, 2) : "") + " (mean of its newest segment, " +
        lv.n + " run(s)" + (lv.repeats ? ", ± of that run's " + lv.repeats +
          " repeats: the spread within one run, which understates the noise between runs" : "") +
        (data.outliers ? ", marked outliers left out" : "") + ")";
      p.appendChild(el("span", text, { "class": "bl-level", "data-metric": lv.metric }));
    });
    /* MBU at the decode level, MFU at the prefill level: "not measured" without a figure. */
    (data.utilisation || []).forEach(function (u, i) {
      var shown = typeof u[1] === "number" ? fmt(u[1], 1) + "% " + u[2] : u[1] + " (" + u[2] + ")";
      p.appendChild(el("span", (i ? "; " : ". ") + u[0] + " " + shown, { "class": "bl-util", "data-util": u[0] }));
    });
    if (data.impossible) {
      p.appendChild(document.createTextNode(" "));
      p.appendChild(badge("impossible", "bad", data.impossible));
    }
    if (data.impossible_prefill) {
      p.appendChild(document.createTextNode(" "));
      p.appendChild(badge("impossible prefill", "bad", data.impossible_prefill));
    }
    if (data.gate) {
      p.appendChild(document.createTextNode(" "));
      p.appendChild(badge("gate " + data.gate.verdict, "gate-" + data.gate.verdict,
        data.gate.detail || "the newest run's gate verdict"));
    }
    /* Each metric's own gate: a regression still in effect in any metric fails it. */
    (data.metric_gates || []).forEach(function (g) {
      p.appendChild(document.createTextNode(" "));
      var b = badge(g.metric + " " + g.verdict, "gate-" + g.verdict, g.detail);
      b.setAttribute("data-metric", g.metric);
      p.appendChild(b);
    });
    if (level && level.unstable) {
      p.appendChild(document.createTextNode(" "));
      p.appendChild(badge("unstable series", "unstable", "the newest segment's runs vary by " +
        fmt(100 * level.cv, 1) + "% (coefficient of variation), more than the stated " +
        fmt(100 * level.max_cv, 0) + "%: the level is worth less than it looks"));
    }
    if (data.unstable) {
      p.appendChild(document.createTextNode(" "));
      p.appendChild(badge("newest run unstable", "unstable", data.unstable));
    }
    if (data.unstable_count) {
      p.appendChild(el("span", " " + data.unstable_count + " unstable run(s), ringed in the charts.",
        { "class": "bl-unstable-count", title: data.unstable_title }));
    }
    if (data.outliers) {
      p.appendChild(el("span", " " + data.outliers + " run(s) marked as outliers, drawn as hollow crosses.",
        { "class": "bl-outlier-count" }));
    }
    return p;
  }

  function table(box, title, spec, empty) {
    box.appendChild(el("h2", title));
    if (!spec) { box.appendChild(el("p", empty)); return; }
    var holder = el("div");
    holder.innerHTML = spec.html; /* built with escaping, cell by cell, by the site build */
    Array.prototype.forEach.call(holder.querySelectorAll("table[data-bl-sort]"), ui().sortable);
    while (holder.firstChild) { box.appendChild(holder.firstChild); }
    if (spec.hidden) {
      box.appendChild(el("p", spec.hidden + " more row(s) not shown, to keep this page small.", { "class": "bl-more" }));
    }
  }

  var RUN_HEAD = [["Time (UTC)", "text"], ["Model", "text"], ["Precision", "text"], ["Threads", "num"],
    ["Status", "text"], ["Peak tok/s", "num"], ["Decode tok/s", "num"], ["Build", "text"], ["Attempt", "text"],
    ["Marks", "text"]];

  function runsTable(box, sid, rows, hidden, root) {
    /* Rows: [time, run id, model, precision, threads, status, peak, decode, build, attempt,
       flags]; every cell written with textContent. */
    box.appendChild(el("h2", "Runs"));
    var wrap = el("div", null, { "class": "bl-table bl-cards" });  /* a card per run on a phone */
    var t = el("table", null, { "data-bl-sort": "", "data-sorted": "0:desc", id: "bl-series-runs" });
    var head = t.createTHead().insertRow();
    RUN_HEAD.forEach(function (c) {
      head.appendChild(el("th", c[0], { "data-kind": c[1], tabindex: "0", "class": c[1] === "num" ? "bl-num" : "" }));
    });
    var body = t.createTBody();
    rows.forEach(function (r) {
      var tr = body.insertRow();
      function cell(i, text, v) {
        var td = tr.insertCell();
        td.setAttribute("data-label", RUN_HEAD[i][0]);
        if (RUN_HEAD[i][1] === "num") { td.className = "bl-num"; }
        if (v !== undefined && v !== null) { td.setAttribute("data-v", String(v)); }
        if (typeof text === "string" || typeof text === "number") { td.textContent = String(text); } else { td.appendChild(text); }
        return td;
      }
      var href = root + "run.html?s=" + encodeURIComponent(sid) + "&r=" + encodeURIComponent(r[1]);
      cell(0, link(r[0].replace("T", " ").replace("Z", ""), href), r[0]);
      cell(1, r[2] || "–");
      cell(2, r[3] || "–");
      cell(3, r[4] === null || r[4] === undefined ? "–" : r[4], r[4]);
      var ok = r[5] === "ok";
      cell(4, badge(r[5], ok ? "ok" : r[5] === "hole" ? "hole" : "bad"), r[5]);
      cell(5, typeof r[6] === "number" ? fmt(r[6], 1) : "–", r[6]);
      cell(6, typeof r[7] === "number" ? fmt(r[7], 1) : "–", r[7]);
      cell(7, r[8] || "–");
      cell(8, r[9] || "–");
      var marks = el("span");
      (r[10] || []).forEach(function (f) {
        var kind = f.indexOf("gate ") === 0 ? "gate-" + f.slice(5) : f;
        marks.appendChild(badge(f, kind));
      });
      if (!(r[10] || []).length) { marks.textContent = "–"; }
      cell(9, marks, (r[10] || []).join(" "));
    });
    wrap.appendChild(t);
    box.appendChild(wrap);
    ui().sortable(t);
    if (hidden) {
      box.appendChild(el("p", hidden + " more run(s) not shown, to keep this page small.", { "class": "bl-more" }));
    }
  }

  function pairs(box, title, head, rows) {
    box.appendChild(el("h2", title));
    var wrap = el("div", null, { "class": "bl-table" });
    var t = el("table");
    var tr = t.createTHead().insertRow();
    head.forEach(function (h) { tr.appendChild(el("th", h)); });
    var body = t.createTBody();
    rows.forEach(function (row) {
      var r = body.insertRow();
      row.forEach(function (cell) { r.insertCell().textContent = String(cell); });
    });
    wrap.appendChild(t);
    box.appendChild(wrap);
  }

  function chartDivs(box, data, root) {
    var divs = [];
    window.BENCHLAB_CHARTS = window.BENCHLAB_CHARTS || {};
    data.charts.forEach(function (figure) {
      figure.data.forEach(function (trace) {
        if (trace.cdi) { trace.customdata = trace.cdi.map(function (i) { return data.points[i]; }); delete trace.cdi; }
      });
      window.BENCHLAB_CHARTS[figure.slug] = { data: figure.data, layout: figure.layout, config: figure.config };
      var wrap = el("div", null, { "class": "bl-figure" });
      var div = el("div", null, { "class": "bl-chart", id: "chart-" + figure.slug, "data-chart": figure.slug,
        "data-root": root, role: "img", "aria-label": figure.title });
      wrap.appendChild(div);
      box.appendChild(wrap);
      divs.push(div);
    });
    return divs;
  }

  function show(box, sid, data, root) {
    box.textContent = "";
    document.querySelector("article h1").textContent = data.title;
    document.title = data.title + " · " + document.title;
    box.appendChild(lead(data));
    box.appendChild(verdicts(data));
    var divs = chartDivs(box, data, root);
    pairs(box, "Memory, energy and latency", ["Measure", "Newest run"], data.measures);
    table(box, "Steps found", data.steps, "No step in this series' history.");
    runsTable(box, sid, data.runs, data.runs_hidden, root);
    pairs(box, "Identity", ["Field", "Value"], data.identity);
    ui().withPlotly().then(function (Plotly) {
      if (!Plotly) { return; }
      divs.forEach(function (div) { ui().render(Plotly, div); });
      box.setAttribute("data-drawn", String(divs.length));
    });
  }

  function list(box, root) {
    /* No series named: every series, filtered by a text box. */
    ui().loadScript(root + "bl/series/index.js").then(function () {
      var index = (window.BENCHLAB_SERIES_INDEX || {}).all || [];
      box.textContent = "";
      box.appendChild(el("p", index.length + " series. Pick one, or filter by machine, model or label.", { "class": "bl-lead" }));
      var input = el("input", null, { type: "search", placeholder: "Filter series", "aria-label": "Filter series", "class": "bl-series-filter" });
      box.appendChild(input);
      var ul = el("ul", null, { "class": "bl-series-list" });
      index.forEach(function (s) {
        var li = el("li");
        li.appendChild(link(s.label, root + s.url));
        li.appendChild(document.createTextNode(" · " + s.runs + " run(s)"));
        li.setAttribute("data-text", (s.label + " " + s.machine + " " + s.model + " " + s.id).toLowerCase());
        ul.appendChild(li);
      });
      box.appendChild(ul);
      input.addEventListener("input", function () {
        var needle = input.value.toLowerCase();
        Array.prototype.forEach.call(ul.children, function (li) {
          li.style.display = li.getAttribute("data-text").indexOf(needle) >= 0 ? "" : "none";
        });
      });
    }, function () { box.textContent = "No series index in this site."; });
  }

  function start() {
    var box = document.getElementById("bl-series");
    if (!box || !ui()) { return; }
    var root = box.getAttribute("data-root") || "";
    var params = new URLSearchParams(window.location.search);
    var hash = window.location.hash.replace(/^#/, "");
    var sid = params.get("s") || (SERIES_ID.test(hash) ? hash : "");
    if (!sid) { list(box, root); return; }
    if (!SERIES_ID.test(sid)) { box.textContent = "Not a series id: " + sid + "."; return; }
    ui().loadScript(root + "bl/series/" + sid + ".js").then(function () {
      var data = (window.BENCHLAB_SERIES || {})[sid];
      if (!data) { box.textContent = "No published data for series " + sid + "."; return; }
      show(box, sid, data, root);
    }, function () { box.textContent = "No published data for series " + sid + "."; });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
