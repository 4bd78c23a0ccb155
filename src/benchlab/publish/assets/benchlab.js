/* benchlab charts: render every .bl-chart from window.BENCHLAB_CHARTS and wire the
   machine / model / precision filter bars. Points carry customdata [machine, model,
   precision, ...]; filtering keeps the points whose first three fields match. */
(function () {
  "use strict";
  var DIMS = ["machine", "model", "precision"];

  function charts() {
    return Array.prototype.slice.call(document.querySelectorAll(".bl-chart[data-chart]"));
  }

  function render(div) {
    var spec = (window.BENCHLAB_CHARTS || {})[div.getAttribute("data-chart")];
    if (!spec || !window.Plotly) { return; }
    div.blOriginal = spec.data;
    window.Plotly.newPlot(div, filtered(spec.data, {}), spec.layout, spec.config);
  }

  function keep(point, wanted) {
    for (var d = 0; d < DIMS.length; d++) {
      var want = wanted[DIMS[d]];
      if (want && (!point || String(point[d]) !== want)) { return false; }
    }
    return true;
  }

  function filtered(data, wanted) {
    return data.map(function (trace) {
      var custom = trace.customdata || [];
      var index = [];
      for (var i = 0; i < custom.length; i++) { if (keep(custom[i], wanted)) { index.push(i); } }
      var copy = {};
      Object.keys(trace).forEach(function (key) {
        var value = trace[key];
        copy[key] = Array.isArray(value) && value.length === custom.length && custom.length
          ? index.map(function (i) { return value[i]; }) : value;
      });
      copy.visible = index.length > 0;
      return copy;
    });
  }

  function values(dim) {
    var seen = {};
    charts().forEach(function (div) {
      (div.blOriginal || []).forEach(function (trace) {
        (trace.customdata || []).forEach(function (point) { seen[String(point[dim])] = true; });
      });
    });
    return Object.keys(seen).sort();
  }

  function decode(text) {
    /* Chart labels hold user strings as HTML entities; show them as the plain text. */
    var area = document.createElement("textarea");
    area.innerHTML = text;
    return area.value;
  }

  function wire(bar) {
    var selects = bar.querySelectorAll("select[data-dim]");
    Array.prototype.forEach.call(selects, function (select) {
      var dim = DIMS.indexOf(select.getAttribute("data-dim"));
      values(dim).forEach(function (value) {
        var option = document.createElement("option");
        option.value = value;
        option.textContent = decode(value);
        select.appendChild(option);
      });
      select.addEventListener("change", apply);
    });
    function apply() {
      var wanted = {};
      Array.prototype.forEach.call(selects, function (select) {
        wanted[select.getAttribute("data-dim")] = select.value;
      });
      charts().forEach(function (div) {
        if (div.blOriginal) { window.Plotly.react(div, filtered(div.blOriginal, wanted), div.layout); }
      });
    }
  }

  function tables() {
    Array.prototype.forEach.call(document.querySelectorAll("input[data-table-filter]"), function (input) {
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

  function start() {
    charts().forEach(render);
    Array.prototype.forEach.call(document.querySelectorAll(".bl-filter"), wire);
    tables();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
