/* benchlab: the site's one script, vanilla and small.

   - charts: render every .bl-chart from window.BENCHLAB_CHARTS once plotly is there (the
     site's plotly.js resolves window.BENCHLAB_PLOTLY; a standalone page loads window.Plotly),
     themed from MkDocs Material's light/dark colours, a "show all" button where only the top
     series are drawn, and a click on a point opens its run page;
   - filter bars (machine / model / precision), their state kept in the URL hash;
   - sortable tables (click or Enter on a heading);
   - the run page (the compare page has its own script, compare.js).
   Points carry customdata [machine, model, precision, run id, time, label, version, series];
   a chart file writes the fields a trace's points share once (trace.blcd, see `expand`);
   user strings reach the DOM only through textContent. */
(function () {
  "use strict";
  var DIMS = ["machine", "model", "precision"];

  function all(selector, root) {
    return Array.prototype.slice.call((root || document).querySelectorAll(selector));
  }

  function el(tag, text, attrs) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    return node;
  }

  function decode(text) {
    /* Chart labels hold user strings as HTML entities; show them as the plain text. */
    var area = document.createElement("textarea");
    area.innerHTML = text;
    return area.value;
  }

  /* --- the URL hash: filters and picks, as key=value&key=value ------------------------ */

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

  function setHash(state) {
    var parts = Object.keys(state).sort().filter(function (k) { return state[k]; })
      .map(function (k) { return encodeURIComponent(k) + "=" + encodeURIComponent(state[k]); });
    var url = window.location.href.split("#")[0] + (parts.length ? "#" + parts.join("&") : "");
    try { window.history.replaceState(null, "", url); } catch (e) { window.location.hash = parts.join("&"); }
  }

  /* --- charts -------------------------------------------------------------------------- */

  function charts() { return all(".bl-chart[data-chart]"); }

  function theme() {
    var style = window.getComputedStyle(document.body);
    var fg = style.getPropertyValue("--md-default-fg-color").trim() || "#1f2937";
    return { font: { color: fg } };
  }

  function narrow() { return window.innerWidth < 600; }

  function dark() { return document.body.getAttribute("data-md-color-scheme") === "slate"; }

  function ink(data) {
    /* The palette's black (Okabe-Ito's eighth colour) is drawn in the text colour on a dark
       theme, where black would vanish. */
    if (!dark()) { return data; }
    var text = JSON.stringify(data);
    return text.indexOf('"#000000"') < 0 ? data : JSON.parse(text.split('"#000000"').join(JSON.stringify(theme().font.color)));
  }

  function draw(Plotly, div) {
    /* (Re)draw a chart from its whole data under the page's filters and its metric. */
    var layout = Object.assign({}, div.blLayout, theme());
    var picked = metricOf(div);
    if (picked) {
      layout[picked.axis] = JSON.parse(JSON.stringify(picked.layout));
      if (picked.chart_title) { layout.title = Object.assign({}, layout.title, { text: picked.chart_title }); }
    }
    var data = filtered(ink(div.blOriginal), wantedFor(div), div.blSpec.layout.meta || {});
    autolog(div.blSpec.layout.meta || {}, data, layout);
    var none = div.blOriginal.length > 0 && !data.some(function (t) {
      return t.visible !== false && (t.x || t.y || []).length > 0;
    });
    if (div.blNoMatch) { div.blNoMatch.hidden = !none; }
    return div.blDrawn ? Plotly.react(div, data, layout) : Plotly.newPlot(div, data, layout, div.blSpec.config);
  }

  function autolog(meta, data, layout) {
    /* Linear unless what is drawn spans more than meta.autolog.wide (two decades): a
       filter that leaves only close values gets its linear axis back, and the reverse. */
    var auto = meta.autolog || {};
    Object.keys(auto).forEach(function (axis) {
      if (axis === "wide") { return; }
      var key = auto[axis].key, values = [];
      data.forEach(function (t) {
        if (t.visible === true) { (t[key] || []).forEach(function (v) { if (v > 0) { values.push(v); } }); }
      });
      var wide = values.length > 0 && Math.max.apply(null, values) / Math.min.apply(null, values) > auto.wide;
      layout[axis] = JSON.parse(JSON.stringify(wide ? auto[axis].log : auto[axis].linear));
    });
  }

  function metricOf(div) {
    var metrics = ((div.blSpec.layout.meta || {}).metrics) || [];
    for (var i = 0; i < metrics.length; i++) { if (metrics[i].name === div.blMetric) { return metrics[i]; } }
    return null;
  }

  function wantedFor(div) {
    var wanted = currentFilters();
    if (div.blMetric) { wanted.metric = div.blMetric; }
    return wanted;
  }

  function metricPicker(Plotly, div) {
    /* A chart that carries several metrics (meta.metrics) gets a selector of its own. */
    var metrics = ((div.blSpec.layout.meta || {}).metrics) || [];
    if (!metrics.length) { return; }
    var state = hashState();
    div.blMetric = metrics[0].name;
    metrics.forEach(function (m) { if (m.name === state.metric) { div.blMetric = m.name; } });
    if (metrics.length < 2) { return; }
    var label = el("label", "Metric ", { "class": "bl-metric" });
    var select = el("select", null, { "data-metric": div.getAttribute("data-chart") });
    metrics.forEach(function (m) { select.appendChild(el("option", m.title, { value: m.name })); });
    select.value = div.blMetric;
    select.addEventListener("change", function () {
      div.blMetric = select.value;
      var next = hashState();
      next.metric = select.value;
      setHash(next);
      draw(Plotly, div);
    });
    label.appendChild(select);
    div.parentNode.insertBefore(label, div);
  }

  function expand(trace) {
    /* A chart file's trace holds per point only the customdata fields that vary within it;
       blcd.row is a point with the shared ones, blcd.vary where each carried field goes and
       blcd.enc how it is written: as is, less a shared prefix (p), or as an index into its
       values (v) (charts.output.compact_trace). Put every point's full customdata back,
       once, before plotly, the filters or a click read it. */
    var compact = trace.blcd;
    if (!compact) { return; }
    trace.customdata = (trace.customdata || []).map(function (values) {
      var point = compact.row.slice();
      compact.vary.forEach(function (index, j) {
        var enc = compact.enc[j];
        point[index] = !enc ? values[j] : enc.p !== undefined ? enc.p + values[j] : enc.v[values[j]];
      });
      return point;
    });
    delete trace.blcd;
  }

  function render(Plotly, div) {
    var spec = (window.BENCHLAB_CHARTS || {})[div.getAttribute("data-chart")];
    if (!spec) { return; }
    spec.data.forEach(expand);
    spec.data.forEach(function (trace) {
      /* A trend's later metric shares its runs' x and customdata with an earlier line. */
      var like = spec.data[(trace.meta || {}).like];
      if (like && like !== trace) { trace.x = like.x; trace.customdata = like.customdata; }
    });
    div.blOriginal = spec.data;
    div.blSpec = spec;
    var layout = Object.assign({}, spec.layout);
    if (narrow()) {
      var right = layout.margin && layout.margin.r > 12 ? layout.margin.r : 6;  /* labels beside bars */
      layout.margin = Object.assign({}, layout.margin, { l: 44, r: right });
      layout.title = Object.assign({}, layout.title, { font: { size: 13 } });
      if (spec.data.filter(function (t) { return t.visible !== false; }).length > 5) {
        /* A crowded legend would bury a phone-sized plot: hover names each line instead. */
        layout.showlegend = false;
        layout.height = 380;
        layout.margin.b = 56;
      }
    }
    div.blLayout = layout;
    var meta = spec.layout.meta || {};
    div.blNoMatch = el("p", meta.dropped
      ? "No runs match this filter among the top " + meta.total + " of " + (meta.total + meta.dropped) +
        " series this chart carries; every series has its own page."
      : "No runs match this filter: choose another value, or All.",
      { "class": "bl-nomatch", role: "status",
        style: "margin:.4rem 0;padding:.4rem .7rem;border-left:3px solid #E69F00;font-weight:600" });
    div.blNoMatch.hidden = true;
    div.parentNode.insertBefore(div.blNoMatch, div);
    metricPicker(Plotly, div);
    draw(Plotly, div);
    div.blDrawn = true;
    if (meta.hidden) {
      var button = el("button", "Show all " + meta.total + " series", { type: "button", "class": "bl-showall" });
      button.addEventListener("click", function () {
        var shownAll = button.getAttribute("data-all") === "1";
        if (shownAll) { draw(Plotly, div); } else {
          Plotly.restyle(div, { visible: div.data.map(function (t) { return t.visible === false ? false : true; }) });
        }
        button.setAttribute("data-all", shownAll ? "0" : "1");
        button.textContent = shownAll ? "Show all " + meta.total + " series" : "Show the top " + (meta.total - meta.hidden) + " only";
      });
      div.parentNode.insertBefore(button, div);
    }
    div.on("plotly_click", function (event) {
      var point = event && event.points && event.points[0];
      var custom = point && point.customdata;
      if (custom && custom.length > 7 && typeof custom[7] === "string" && custom[7].charAt(0) === "s") {
        var root = div.getAttribute("data-root") || "";
        window.location.href = root + "run.html?s=" + encodeURIComponent(custom[7]) + "&r=" + encodeURIComponent(custom[3]);
      }
    });
  }

  function retheme(Plotly) {
    charts().forEach(function (div) { if (div.blDrawn) { draw(Plotly, div); } });
  }

  function keep(point, wanted) {
    for (var d = 0; d < DIMS.length; d++) {
      var want = wanted[DIMS[d]];
      if (want && (!point || String(point[d]) !== want)) { return false; }
    }
    return true;
  }

  function chosen(trace, wanted) {
    /* A trace made for one filter state (meta.when: a machine's best at q4 is not its best
       overall) is shown only in that state, and only for the chart's current metric. */
    var when = (trace.meta || {}).when;
    if (!when) { return true; }
    return Object.keys(when).every(function (k) { return (wanted[k] || "") === when[k]; });
  }

  function shownAs(trace, meta) {
    /* How a trace is drawn when its points match: a pooled chart's series all compete again
       (pick); a trace made for a filter state or a metric (meta.when) that is chosen is
       drawn as its meta.shown says (true, or "legendonly" past a chart's top), whatever
       the figure's first state hid; another keeps its visibility. */
    var own = trace.meta || {};
    if (own.when) { return own.shown === undefined ? true : own.shown; }
    return trace.visible === undefined || (meta && meta.pick) ? true : trace.visible;
  }

  function filtered(data, wanted, meta) {
    var any = DIMS.some(function (d) { return wanted[d]; });
    var out = data.map(function (trace) {
      if (!chosen(trace, wanted)) { return Object.assign({}, trace, { visible: false }); }
      var custom = trace.customdata || [];
      if (!any || !custom.length) { return Object.assign({}, trace, { visible: shownAs(trace, meta) }); }
      var index = [];
      for (var i = 0; i < custom.length; i++) { if (keep(custom[i], wanted)) { index.push(i); } }
      var copy = {};
      Object.keys(trace).forEach(function (key) {
        var value = trace[key];
        copy[key] = Array.isArray(value) && value.length === custom.length
          ? index.map(function (i) { return value[i]; }) : value;
      });
      var marker = trace.marker;
      if (marker) {
        /* Per-point colours, symbols and bar patterns follow their points. */
        var m = Object.assign({}, marker);
        var shape = (marker.pattern || {}).shape;
        ["color", "symbol"].forEach(function (part) {
          if (Array.isArray(marker[part]) && marker[part].length === custom.length) {
            m[part] = index.map(function (i) { return marker[part][i]; });
          }
        });
        if (Array.isArray(shape) && shape.length === custom.length) {
          m.pattern = Object.assign({}, marker.pattern, { shape: index.map(function (i) { return shape[i]; }) });
        }
        copy.marker = m;
      }
      copy.visible = index.length > 0 ? shownAs(trace, meta) : false;
      return copy;
    });
    if (meta && meta.tail) { out = out.map(function (t) { return tail(t, meta.tail); }); }
    return meta && meta.pick ? pick(out, meta.pick) : out;
  }

  function tail(trace, n) {
    /* The last n points (a sorted bar chart's best) of every per-point array. */
    var size = (trace.customdata || []).length;
    if (size <= n) { return trace; }
    var copy = {};
    Object.keys(trace).forEach(function (key) {
      var value = trace[key];
      copy[key] = Array.isArray(value) && value.length === size ? value.slice(size - n) : value;
    });
    if (trace.marker) {
      var m = Object.assign({}, trace.marker);
      if (Array.isArray(m.color) && m.color.length === size) { m.color = m.color.slice(size - n); }
      if (Array.isArray(m.symbol) && m.symbol.length === size) { m.symbol = m.symbol.slice(size - n); }
      if (m.pattern && Array.isArray(m.pattern.shape) && m.pattern.shape.length === size) {
        m.pattern = Object.assign({}, m.pattern, { shape: m.pattern.shape.slice(size - n) });
      }
      copy.marker = m;
    }
    return copy;
  }

  function pick(data, sizes) {
    /* Among the series that match, the best-scored (meta.score) are drawn, the next ones
       wait in the legend, the rest stay out: the top is picked after filtering. */
    var order = [];
    data.forEach(function (t, i) { if (t.visible !== false && (t.x || []).length) { order.push(i); } });
    order.sort(function (a, b) { return ((data[b].meta || {}).score || 0) - ((data[a].meta || {}).score || 0) || a - b; });
    var out = data.map(function (t) { return Object.assign({}, t, { visible: false }); });
    order.forEach(function (index, rank) {
      out[index].visible = rank < sizes[0] ? true : rank < sizes[1] ? "legendonly" : false;
    });
    return out;
  }

  function currentFilters() {
    var state = hashState();
    var wanted = {};
    DIMS.forEach(function (d) { if (state[d]) { wanted[d] = state[d]; } });
    return wanted;
  }

  function values(dim) {
    var seen = {};
    charts().forEach(function (div) {
      (div.blOriginal || []).forEach(function (trace) {
        (trace.customdata || []).forEach(function (point) { if (point[dim]) { seen[String(point[dim])] = true; } });
      });
    });
    return Object.keys(seen).sort();
  }

  function wire(Plotly, bar) {
    var selects = all("select[data-dim]", bar);
    var state = hashState();
    selects.forEach(function (select) {
      var name = select.getAttribute("data-dim");
      values(DIMS.indexOf(name)).forEach(function (value) {
        var option = el("option", decode(value), { value: value });
        select.appendChild(option);
      });
      if (state[name]) { select.value = state[name]; }
      select.addEventListener("change", apply);
    });
    function apply() {
      var next = hashState();
      selects.forEach(function (select) { next[select.getAttribute("data-dim")] = select.value; });
      setHash(next);
      charts().forEach(function (div) { if (div.blDrawn) { draw(Plotly, div); } });
    }
  }

  /* --- sortable tables ------------------------------------------------------------------ */

  function cellKey(cell, numeric) {
    var raw = cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent.trim();
    if (!numeric) { return raw.toLowerCase(); }
    var number = parseFloat(String(raw).replace(/[^0-9eE.+-]/g, ""));
    return isNaN(number) ? null : number;
  }

  function sortTable(table, column, direction) {
    var head = table.tHead.rows[0].cells[column];
    var numeric = head.getAttribute("data-kind") === "num";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (x, y) {
      var a = cellKey(x.cells[column], numeric), b = cellKey(y.cells[column], numeric);
      if (a === null || a === "") { return b === null || b === "" ? 0 : 1; }
      if (b === null || b === "") { return -1; }
      var order = a < b ? -1 : a > b ? 1 : 0;
      return direction === "asc" ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.setAttribute("aria-sort", i === column ? (direction === "asc" ? "ascending" : "descending") : "none");
    });
  }

  function sortable(table) {
    var sorted = (table.getAttribute("data-sorted") || "").split(":");
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
      th.setAttribute("aria-sort", String(column) === sorted[0] ? (sorted[1] === "asc" ? "ascending" : "descending") : "none");
      function go() {
        var now = th.getAttribute("aria-sort");
        var numeric = th.getAttribute("data-kind") === "num";
        var direction = now === "descending" ? "asc" : now === "ascending" ? "desc" : numeric ? "desc" : "asc";
        sortTable(table, column, direction);
      }
      th.addEventListener("click", go);
      th.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(); } });
    });
  }

  function tableFilters() {
    all("input[data-table-filter]").forEach(function (input) {
      var table = document.getElementById(input.getAttribute("data-table-filter"));
      if (!table) { return; }
      input.addEventListener("input", function () {
        var needle = input.value.toLowerCase();
        Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
          row.style.display = row.textContent.toLowerCase().indexOf(needle) >= 0 ? "" : "none";
        });
      });
    });
  }

  /* --- loading a data script (works from file://, where fetch does not) ---------------- */

  function loadScript(src) {
    return new Promise(function (resolve, reject) {
      var script = el("script", null, { src: src });
      script.onload = resolve;
      script.onerror = function () { reject(new Error("cannot load " + src)); };
      document.head.appendChild(script);
    });
  }

  function fmt(value, digits) {
    if (value === null || value === undefined || value === "") { return "–"; }
    if (typeof value !== "number") { return String(value); }
    return value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
  }

  function htmlTable(columns, rows, sorted, stack) {
    /* columns: [label, kind]; rows: arrays of cells, each a string/number or {text, href, v}.
       `stack`: shown as cards on a phone, every field labelled. */
    var wrap = el("div", null, { "class": stack ? "bl-table bl-stack" : "bl-table" });
    var table = el("table", null, { "data-bl-sort": "" });
    if (sorted) { table.setAttribute("data-sorted", sorted); }
    var head = table.createTHead().insertRow();
    columns.forEach(function (c) {
      var th = el("th", c[0], { "data-kind": c[1], tabindex: "0" });
      if (c[1] === "num") { th.className = "bl-num"; }
      head.appendChild(th);
    });
    var body = table.createTBody();
    rows.forEach(function (row) {
      var tr = body.insertRow();
      row.forEach(function (cell, i) {
        var td = tr.insertCell();
        td.setAttribute("data-label", columns[i][0]);
        if (columns[i][1] === "num") { td.className = "bl-num"; }
        if (cell && typeof cell === "object") {
          if (cell.href) { td.appendChild(el("a", cell.text, { href: cell.href })); } else { td.textContent = cell.text; }
          if (cell.v !== undefined && cell.v !== null) { td.setAttribute("data-v", String(cell.v)); }
        } else {
          td.textContent = cell === null || cell === undefined ? "–" : String(cell);
        }
      });
    });
    wrap.appendChild(table);
    sortable(table);
    return wrap;
  }

  /* --- the run page ---------------------------------------------------------------------- */

  function batchAxis(curve) {
    /* A log axis where the batch sizes span one; a curve of one size (llama-bench's batch 1)
       gets a linear axis ticked at that size, not plotly's log default of 0.125 to 8. */
    var sizes = [];
    curve.forEach(function (p) { if (sizes.indexOf(p.batch) < 0) { sizes.push(p.batch); } });
    var grid = "rgba(128,128,128,0.25)";
    if (sizes.length > 1) { return { type: "log", dtick: 0.30103, title: { text: "Batch size (log scale)" }, gridcolor: grid }; }
    return { type: "linear", tickvals: sizes, range: [0, 2 * sizes[0]], title: { text: "Batch size" }, gridcolor: grid };
  }

  var RUN_METRICS = [["peak_tok_per_sec", "Peak aggregate tok/s"], ["baseline_tok_per_sec", "Batch-1 tok/s"],
    ["speedup", "Speedup"], ["prefill_tok_per_sec", "Prefill tok/s"], ["prefill_stddev", "Prefill stddev"],
    ["decode_tok_per_sec", "Decode tok/s"], ["decode_stddev", "Decode stddev"]];
  var RUN_IDENTITY = ["machine_id", "model", "model_id", "model_digest", "model_size", "model_params",
    "precision", "backend", "version", "revision", "mode", "threads", "shape", "prompt_tokens",
    "gen_tokens", "depth", "batch_sizes", "n_batch", "n_ubatch", "gpu_layers", "flash_attn",
    "type_k", "type_v", "axes"];

  function runPage(Plotly) {
    var box = document.getElementById("bl-run");
    if (!box) { return; }
    var params = new URLSearchParams(window.location.search);
    var sid = params.get("s"), rid = params.get("r");
    if (!sid || !/^s[0-9a-f]+$/.test(sid) || !rid) {
      box.textContent = "This page shows one run: open it from a table or a chart point.";
      return;
    }
    loadScript("bl/runs/" + sid + ".js").then(function () {
      var data = (window.BENCHLAB_RUNS || {})[sid] || { runs: {} };
      var run = data.runs[rid];
      box.textContent = "";
      if (!run) { box.appendChild(el("p", "Run " + rid + " is not among the runs this site publishes details of.")); return; }
      document.querySelector("article h1").textContent = run.label;
      document.title = run.run_id + " · " + document.title;
      var status = run.status || "ok";
      var lead = el("p", null, { "class": "bl-lead" });
      lead.appendChild(el("span", status === "ok" ? "ok" : "failed" + (run.failure_kind ? " · " + run.failure_kind : ""),
        { "class": "bl-badge bl-badge--" + (status === "ok" ? "ok" : "bad") }));
      if (run.unstable) {
        lead.appendChild(document.createTextNode(" "));
        lead.appendChild(el("span", "unstable", { "class": "bl-badge bl-badge--unstable", title: run.unstable }));
      }
      if (run.gate) {
        lead.appendChild(document.createTextNode(" "));
        lead.appendChild(el("span", "gate " + run.gate.verdict, { "class": "bl-badge bl-badge--gate-" + run.gate.verdict, title: run.gate.detail || ("gate " + run.gate.verdict) }));
      }
      if (run.outlier) {
        lead.appendChild(document.createTextNode(" "));
        lead.appendChild(el("span", "outlier", { "class": "bl-badge bl-badge--outlier", title: "marked as an outlier: " + run.outlier }));
      }
      lead.appendChild(document.createTextNode(" " + run.timestamp.replace("T", " ").replace("Z", "") + " UTC · attempt " +
        (run.attempt || 1) + "/" + (run.attempts || run.attempt || 1) + " · " + (run.warnings || 0) + " warning(s) · "));
      if (data.series_page) { lead.appendChild(el("a", "series history", { href: data.series_page })); }
      box.appendChild(lead);
      box.appendChild(el("p", run.run_id, { "class": "bl-runid" }));
      if (run.error) { box.appendChild(el("p", run.error, { "class": "bl-callout bl-callout--empty" })); }
      if (run.outlier) { box.appendChild(el("p", "Marked as an outlier (" + run.outlier + "): left out of best, tables, compare and the detector.", { "class": "bl-callout bl-callout--outlier" })); }
      if (run.gate && run.gate.detail) { box.appendChild(el("p", "Gate " + run.gate.verdict + ": " + run.gate.detail, { "class": "bl-gate-detail" })); }
      box.appendChild(el("h2", "Metrics"));
      box.appendChild(htmlTable([["Metric", "text"], ["Value", "num"]],
        RUN_METRICS.filter(function (m) { return run[m[0]] !== undefined; })
          .map(function (m) { return [m[1], { text: fmt(run[m[0]], 2), v: run[m[0]] }]; }), ""));
      box.appendChild(el("h2", "Memory, energy and latency"));
      /* A run file names the measures once (measure_names); each run holds its values. */
      box.appendChild(htmlTable([["Measure", "text"], ["Value", "text"]],
        (run.measures || []).map(function (v, i) { return [(data.measure_names || [])[i], v]; }), ""));
      box.appendChild(el("h2", "Tests"));
      box.appendChild(el("p", (run.tests && run.tests.length) ? run.tests.join(", ") : "none recorded"));
      box.appendChild(el("h2", "Identity"));
      box.appendChild(htmlTable([["Field", "text"], ["Value", "text"]],
        RUN_IDENTITY.filter(function (k) { return run[k] !== undefined && run[k] !== null; })
          .map(function (k) { return [k, typeof run[k] === "object" ? JSON.stringify(run[k]) : run[k]]; })
          .concat([["tags", (run.tags || []).join(", ") || "–"]]), ""));
      var curve = run.batch_curve || [];
      box.appendChild(el("h2", "Batch curve"));
      if (!curve.length) { box.appendChild(el("p", "This run has no batch points.")); return; }
      var div = el("div", null, { "class": "bl-chart bl-chart--run" });
      var figure = el("div", null, { "class": "bl-figure" });
      figure.appendChild(div);
      box.appendChild(figure);
      Plotly.newPlot(div, [{ type: "scatter", mode: "lines+markers", name: "aggregate",
        x: curve.map(function (p) { return p.batch; }), y: curve.map(function (p) { return p.agg_tok_per_sec; }),
        hovertemplate: "batch %{x}: <b>%{y:,.1f} tok/s</b><extra></extra>" }],
        Object.assign({ height: 360, margin: { l: 56, r: 12, t: 16, b: 48 }, paper_bgcolor: "rgba(0,0,0,0)",
          plot_bgcolor: "rgba(0,0,0,0)", xaxis: batchAxis(curve),
          yaxis: { title: { text: "Aggregate tokens/s" }, rangemode: "tozero", gridcolor: "rgba(128,128,128,0.25)" } }, theme()),
        { displaylogo: false, responsive: true });
    }, function () { box.textContent = "No published details for series " + sid + "."; });
  }

  /* --- start ------------------------------------------------------------------------------ */

  function withPlotly() {
    if (window.BENCHLAB_PLOTLY) { return window.BENCHLAB_PLOTLY; }
    return Promise.resolve(window.Plotly || null);
  }

  function start() {
    all("table[data-bl-sort]").forEach(sortable);
    tableFilters();
    withPlotly().then(function (Plotly) {
      if (!Plotly) { return; }
      charts().forEach(function (div) { render(Plotly, div); });
      all(".bl-filter").forEach(function (bar) { if (bar.querySelector("select[data-dim]")) { wire(Plotly, bar); } });
      runPage(Plotly);
      new MutationObserver(function () { retheme(Plotly); })
        .observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
    });
  }

  /* What the series page's own script (bl/series.js) draws and sorts with. */
  window.BENCHLAB_UI = { render: render, sortable: sortable, withPlotly: withPlotly, loadScript: loadScript,
    el: el, fmt: fmt };

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
