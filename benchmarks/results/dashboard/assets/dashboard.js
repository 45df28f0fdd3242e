// The nightly history page: draws what benchmarks/dashboard computed when it
// built the page (the blob in #dashboard-data), and loads a model's series
// (data/models/*.js) or a pair of nights (data/pairs/*.js) when chosen.
// Nothing is judged here: verdicts and aggregates come from the build.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("dashboard-data").textContent);
  var config = {displaylogo: false, responsive: true};
  var DAY = 86400000;
  var state = {group: 0, range: data.ranges[0][0], model: null, pair: null, row: null};
  var loaded = {}, waiting = {};

  // ------------------------------------------------------------------ loading
  window.dashboardLoaded = function (path, payload) {
    loaded[path] = payload;
    (waiting[path] || []).forEach(function (done) { done(payload); });
    delete waiting[path];
  };
  function load(path) {  // a script element, not fetch: works from file:// too
    return new Promise(function (resolve, reject) {
      if (loaded[path]) { resolve(loaded[path]); return; }
      if (waiting[path]) { waiting[path].push(resolve); return; }
      waiting[path] = [resolve];
      var script = document.createElement("script");
      script.src = path;
      script.onerror = function () { delete waiting[path]; reject(new Error("cannot load " + path)); };
      document.head.appendChild(script);
    });
  }

  // ------------------------------------------------------------------ helpers
  function group() { return data.groups[state.group]; }
  function rangeStart() {
    for (var i = 0; i < data.ranges.length; i++) { if (data.ranges[i][0] === state.range) { return data.ranges[i][1]; } }
    return 0;
  }
  function dates(from) { return data.nights.slice(from); }
  function rgba(hex, alpha) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + alpha + ")";
  }
  function count(values) { return values.filter(function (v) { return v !== null; }).length; }
  function mode(values) { return count(values) <= data.markerLimit ? "lines+markers" : "lines"; }
  function esc(text) {
    return String(text).replace(/[&<>"']/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;"}[c];
    });
  }
  function dateAxis(from) {
    // Nights are dates: a short history gets one tick a day, never hours.
    var first = Date.parse(data.nights[from]), last = Date.parse(data.nights[data.nights.length - 1]);
    var axis = {type: "date", tickformat: "%Y-%m-%d", hoverformat: "%Y-%m-%d",
                range: [new Date(first - DAY / 2).toISOString(), new Date(last + DAY / 2).toISOString()]};
    if ((last - first) / DAY <= 14) { axis.dtick = DAY; }
    return axis;
  }
  function layout(title, yaxis, from, extra) {
    var base = {title: {text: title, x: 0, font: {size: 14}}, height: 300, template: "plotly_white",
                margin: {l: 60, r: 20, t: 40, b: 40}, hovermode: "closest", showlegend: true,
                xaxis: dateAxis(from), yaxis: Object.assign({automargin: true}, yaxis),
                legend: {orientation: "h", y: -0.2}};
    return Object.assign(base, extra || {});
  }
  function keepDays(div) {  // zoomed in to a few nights: still one tick a day
    div.on("plotly_relayout", function (change) {
      if (!("xaxis.range[0]" in change)) { return; }
      var days = (Date.parse(change["xaxis.range[1]"]) - Date.parse(change["xaxis.range[0]"])) / DAY;
      Plotly.relayout(div, {"xaxis.dtick": days <= 14 ? DAY : null});
    });
  }
  function isolated(x, y) {  // a point between two gaps draws no line: give it a marker
    var xs = [], ys = [];
    y.forEach(function (v, i) {
      if (v !== null && (i === 0 || y[i - 1] === null) && (i === y.length - 1 || y[i + 1] === null)) {
        xs.push(x[i]); ys.push(v);
      }
    });
    return {x: xs, y: ys};
  }
  function commitLinks(night) {
    var parts = data.nightCommits[night].map(function (c) {
      var sha = data.commits[c], short = esc(sha.slice(0, 7));
      return data.repoUrl ? "<a class=\"commit\" href=\"" + esc(data.repoUrl + "/commit/" + sha) + "\"><code>" +
        short + "</code></a>" : "<code title=\"" + esc(sha) + "\">" + short + "</code>";
    });
    if (data.runUrls[night]) { parts.push("<a class=\"run\" href=\"" + esc(data.runUrls[night]) + "\">CI run</a>"); }
    return parts.join(" ") || "no commit recorded";
  }
  function onClickShowCommit(div) {
    div.on("plotly_click", function (event) {
      var point = event.points && event.points[0];
      if (!point) { return; }
      var night = data.nights.indexOf(String(point.x).slice(0, 10));
      if (night < 0) { return; }
      var target = document.getElementById(div.id + "-clicked") || div.parentNode.insertBefore(
        Object.assign(document.createElement("p"), {id: div.id + "-clicked", className: "clicked"}), div.nextSibling);
      target.innerHTML = esc(data.nights[night]) + ": " + commitLinks(night);
    });
  }
  function draw(id, traces, lay, what) {
    var div = document.getElementById(id);
    var empty = what && !traces.some(function (t) { return t.y.some(function (v) { return v !== null; }); });
    if (empty) {  // a chart with nothing on it says so in a line instead
      Plotly.purge(div);
      div.classList.add("empty");
      div.innerHTML = "<p class=\"none\">" + esc(lay.title.text) + ": no " + esc(what) + " recorded.</p>";
      return Promise.resolve();
    }
    if (div.classList.contains("empty")) { div.classList.remove("empty"); div.innerHTML = ""; }
    var first = !div.data;
    return Plotly.react(div, traces, lay, config).then(function () {
      if (first) { keepDays(div); onClickShowCommit(div); }
    });
  }

  // ------------------------------------------------------------------ trends
  function trend(line) { return (group().trends[line] || {ranges: {}}).ranges[state.range]; }
  function lineNames() { return group().lines.filter(function (l) { return trend(l); }); }

  function bandTrace(x, line, color, hi, lo) {
    // One closed shape per run of nights with an interval: a band never
    // bridges a night without one, as the line does not.
    var xs = [], ys = [], i = 0, j, k;
    while (i < x.length) {
      if (lo[i] === null || hi[i] === null) { i++; continue; }
      for (j = i; j < x.length && lo[j] !== null && hi[j] !== null; j++) { xs.push(x[j]); ys.push(hi[j]); }
      for (k = j - 1; k >= i; k--) { xs.push(x[k]); ys.push(lo[k]); }
      xs.push(null); ys.push(null);
      i = j;
    }
    return {x: xs, y: ys, mode: "lines", line: {width: 0}, fill: "toself", fillcolor: rgba(color, 0.2),
            hoverinfo: "skip", showlegend: false, legendgroup: line, name: line + " band"};
  }
  function speedupTrend() {
    var from = rangeStart(), x = dates(from), traces = [];
    lineNames().forEach(function (line) {
      var t = trend(line), color = data.colors[line];
      traces.push(bandTrace(x, line, color, t.hi, t.lo));
      traces.push({x: x, y: t.geo, mode: mode(t.geo), name: line + " (" + t.n + " of " + t.models + " models)",
                   legendgroup: line, line: {color: color}, marker: {size: 4}, meta: line,
                   customdata: t.lo.map(function (lo, i) { return [lo, t.hi[i]]; }),
                   hovertemplate: "%{x}<br>geomean %{y:.3f}x over " + t.n + " models<br>95% band " +
                     "%{customdata[0]:.3f}-%{customdata[1]:.3f}<extra>" + esc(line) + "</extra>"});
    });
    var failed = data.failedGate.filter(function (i) { return i >= from; });
    if (failed.length) {
      traces.push({x: failed.map(function (i) { return data.nights[i]; }), y: failed.map(function () { return 1; }),
                   yaxis: "y2", mode: "markers", name: "gate failed",
                   marker: {symbol: "triangle-down", color: "#d62728", size: 9},
                   customdata: failed.map(function (i) { return data.verdicts[i]; }),
                   hovertemplate: "%{x}<br>%{customdata}<extra></extra>"});
    }
    return draw("trend-speedup", traces, layout(
      "Geomean speedup over the models that passed on every night shown (" + group().label + ")",
      {title: {text: "speedup (log scale)"}, type: "log"}, from,
      {height: 420, yaxis2: {overlaying: "y", range: [0, 1.05], visible: false, fixedrange: true}}));
  }
  function simpleTrend(id, title, ytitle, key, yaxis, format, what) {
    var from = rangeStart(), x = dates(from), traces = [];
    lineNames().forEach(function (line) {
      var t = trend(line);
      traces.push({x: x, y: t[key], mode: mode(t[key]), name: line, line: {color: data.colors[line]},
                   marker: {size: 4}, hovertemplate: "%{x}<br>" + format + " over " + t.n +
                   " models<extra>" + esc(line) + "</extra>"});
    });
    return draw(id, traces, layout(title, Object.assign({title: {text: ytitle}}, yaxis), from), what);
  }
  function passTrend() {
    var from = rangeStart(), x = dates(from), traces = [];
    group().lines.forEach(function (line) {
      var t = group().trends[line];
      if (!t) { return; }
      var pass = t.pass.slice(from), total = t.total.slice(from);
      traces.push({x: x, y: pass.map(function (p, i) { return p === null ? null : 100 * p / total[i]; }),
                   customdata: pass.map(function (p, i) { return [p, total[i]]; }),
                   mode: mode(pass), name: line, line: {color: data.colors[line]}, marker: {size: 4},
                   hovertemplate: "%{x}<br>%{customdata[0]} of %{customdata[1]} passed<extra>" + esc(line) + "</extra>"});
    });
    return draw("trend-pass", traces, layout("Pass rate (accuracy-gated where accuracy rows exist)",
      {title: {text: "% of models run"}, range: [0, 105]}, from));
  }
  var TRENDS = [
    passTrend,
    function () { return simpleTrend("trend-compile", "Mean first call (trace + compile), fixed set", "seconds",
                                     "comp", {rangemode: "tozero"}, "%{y:.2f} s", "first call"); },
    function () { return simpleTrend("trend-memory", "Peak memory compression (baseline / backend, " +
                                     (group().memory.indexOf("device") === 0 ? "device" : "host") + "), fixed set",
                                     "ratio (log scale)", "mem", {type: "log"}, "geomean %{y:.3f}x", "memory peak"); },
    function () { return simpleTrend("trend-headroom", "Headroom captured: share of the zero-overhead limit " +
                                     "(median, fixed set)", "share", "head", {tickformat: ".0%"}, "%{y:.0%}",
                                     "headroom"); }
  ];

  // ------------------------------------------------------------------ a model
  function lines(series, fn) {
    group().lines.forEach(function (line) { if (series[line]) { fn(line, series[line], data.colors[line]); } });
  }
  function hoverCommit(s, i) {
    var c = s.commit[i];
    return c === null || c === undefined ? "" : data.commits[c].slice(0, 7);
  }
  function modelSpeedup(model, series) {
    var x = data.nights, traces = [], annotations = [], shapes = [];
    lines(series, function (line, s, color) {
      traces.push(bandTrace(x, line, color, s.hi, s.lo));
      traces.push({x: x, y: s.sp, mode: mode(s.sp), name: line, legendgroup: line, line: {color: color},
                   marker: {size: 4}, customdata: s.bs.map(function (b, i) { return [b, hoverCommit(s, i)]; }),
                   hovertemplate: "%{x}<br>speedup %{y:.3f}x<br>batch size %{customdata[0]}<br>commit " +
                     "%{customdata[1]}<extra>" + esc(line) + "</extra>"});
      var alone = isolated(x, s.sp);
      if (alone.x.length) {
        traces.push({x: alone.x, y: alone.y, mode: "markers", showlegend: false, legendgroup: line,
                     name: line, marker: {color: color, size: 6}, hoverinfo: "skip"});
      }
      s.bsChanges.forEach(function (change) {
        var night = change[0], y = s.sp[night];
        shapes.push({type: "line", xref: "x", yref: "paper", x0: x[night], x1: x[night], y0: 0, y1: 1,
                     line: {color: color, width: 1, dash: "dot"}});
        annotations.push({x: x[night], y: y === null ? 1 : Math.log10(y), yref: y === null ? "paper" : "y",
                          text: "batch size " + change[1] + " → " + change[2], showarrow: true, arrowhead: 2,
                          ax: 0, ay: -30, font: {size: 11, color: color}, bgcolor: "rgba(255,255,255,0.8)",
                          name: "batch-size " + line});
      });
    });
    return draw("model-speedup", traces, layout(model + ": speedup over the baseline",
      {title: {text: "speedup (log scale)"}, type: "log"}, 0, {annotations: annotations, shapes: shapes}));
  }
  function modelLatency(model, series) {
    var traces = [], baseline = null;
    lines(series, function (line, s, color) {
      traces.push({x: data.nights, y: s.lat, mode: mode(s.lat), name: line, line: {color: color}, marker: {size: 4},
                   hovertemplate: "%{x}<br>%{y:.3f} ms<extra>" + esc(line) + "</extra>"});
      if (!baseline) { baseline = s; }
    });
    if (baseline) {
      traces.push({x: data.nights, y: baseline.base, mode: "lines", name: "baseline", line: {color: "#444", dash: "dot"},
                   hovertemplate: "%{x}<br>%{y:.3f} ms<extra>baseline</extra>"});
    }
    return draw("model-latency", traces, layout(model + ": latency", {title: {text: "ms per iteration"},
                                                                    rangemode: "tozero"}, 0));
  }
  function modelSimple(id, title, ytitle, key, yaxis, format, what) {
    return function (model, series) {
      var traces = [];
      lines(series, function (line, s, color) {
        traces.push({x: data.nights, y: s[key], mode: mode(s[key]), name: line, line: {color: color},
                     marker: {size: 4}, hovertemplate: "%{x}<br>" + format + "<extra>" + esc(line) + "</extra>"});
      });
      return draw(id, traces, layout(model + ": " + title, Object.assign({title: {text: ytitle}}, yaxis), 0), what);
    };
  }
  function modelFailures(model, series) {
    var ran = [], traces = [];
    lines(series, function (line, s) {
      if (!s.status.some(function (st) { return st !== null; })) { return; }
      ran.push(line);
      var nights = [];
      s.status.forEach(function (st, i) { if (st !== null && st !== "pass") { nights.push(i); } });
      if (!nights.length) { return; }
      traces.push({x: nights.map(function (i) { return data.nights[i]; }), y: nights.map(function () { return line; }),
                   customdata: nights.map(function (i) { return [s.status[i], s.error[i] || ""]; }),
                   mode: "markers", name: line, marker: {symbol: "x", size: 10, color: "#d62728"},
                   hovertemplate: "%{x}<br>%{customdata[0]}<br>%{customdata[1]}<extra>%{fullData.name}</extra>"});
    });
    var title = traces.length ? model + ": failed nights" : model + ": no failures on " + ran.join(", ");
    return draw("model-failures", traces, layout(title, {type: "category", categoryorder: "array", categoryarray: ran,
      range: [-0.5, ran.length - 0.5], automargin: true}, 0, {height: 120 + 25 * ran.length, showlegend: false}));
  }
  var MODEL_CHARTS = [
    modelSpeedup, modelLatency,
    modelSimple("model-compile", "first call (trace + compile)", "seconds", "comp", {rangemode: "tozero"}, "%{y:.3f} s",
                "first call"),
    modelSimple("model-headroom", "headroom captured (share of the zero-overhead limit)", "share", "head",
                {tickformat: ".0%"}, "%{y:.0%}", "headroom"),
    modelFailures
  ];
  function showModel(model) {
    var g = group(), index = g.models.indexOf(model);
    if (index < 0) { return Promise.resolve(); }
    return load(g.modelFiles[index]).then(function (series) {
      return MODEL_CHARTS.reduce(function (done, chart) {
        return done.then(function () { return chart(model, series); });
      }, Promise.resolve());
    }).then(function () { document.body.dataset.shown = model; });
  }

  // ------------------------------------------------------------------ two nights
  var pairOld = document.getElementById("pair-old"), pairNew = document.getElementById("pair-new");
  function pairKeys() { return Object.keys(data.pairs).map(function (k) { return k.split(",").map(Number); }); }
  function fillNights(select, indices, chosen) {
    select.innerHTML = indices.map(function (i) {
      return "<option value=\"" + i + "\">" + esc(data.nights[i]) + "</option>";
    }).join("");
    if (chosen !== null && indices.indexOf(chosen) >= 0) { select.value = String(chosen); }
  }
  function showPairOptions() {
    var keys = pairKeys(), chosen = state.pair ? state.pair.split(",").map(Number) : [null, null];
    var olds = keys.map(function (k) { return k[0]; }).filter(function (v, i, a) { return a.indexOf(v) === i; });
    fillNights(pairOld, olds.sort(function (a, b) { return a - b; }), chosen[0]);
    var old = Number(pairOld.value);
    var news = keys.filter(function (k) { return k[0] === old; }).map(function (k) { return k[1]; });
    fillNights(pairNew, news.sort(function (a, b) { return a - b; }), chosen[1]);
  }
  function number(value, digits) { return value === null || value === undefined ? "-" : value.toFixed(digits); }
  function percent(value) { return value === null || value === undefined ? "-" : (value >= 0 ? "+" : "") + (100 * value).toFixed(1) + "%"; }
  function pairTable(pair, key) {
    var nights = key.split(",").map(Number);
    var head = ["model", "backend", "mark", "speedup " + data.nights[nights[0]], "speedup " + data.nights[nights[1]],
                "new / old", "backend/baseline old → new", "change", "p", "detectable", "note"];
    var rows = pair.rows.map(function (r) {
      var ratio = r.oldSpeedup && r.newSpeedup ? r.newSpeedup / r.oldSpeedup : null;
      var interval = r.changeLow !== null && r.changeLow !== undefined ?
        " [" + percent(r.changeLow) + ", " + percent(r.changeHigh) + "]" : "";
      var p = r.p === null ? "-" : (r.p < 0.001 ? "<0.001" : r.p.toFixed(3));
      var cells = ["<a href=\"#model=" + encodeURIComponent(r.name) + "\">" + esc(r.name) + "</a>", esc(r.backend),
                   esc(r.mark), r.oldStatus === "pass" ? number(r.oldSpeedup, 3) : esc(r.oldStatus || "-"),
                   r.newStatus === "pass" ? number(r.newSpeedup, 3) : esc(r.newStatus || "-"), number(ratio, 3),
                   number(r.oldRatio, 3) + " → " + number(r.newRatio, 3), percent(r.change) + interval, p,
                   r.detectable === null || r.detectable === undefined ? "-" : (100 * r.detectable).toFixed(1) + "%",
                   esc(r.note)];
      var css = "mark-" + r.mark.replace(/ /g, "-") + (r.name === state.row ? " chosen" : "");
      return "<tr class=\"" + css + "\" data-name=\"" + esc(r.name) + "\" data-backend=\"" + esc(r.backend) +
             "\" data-mark=\"" + esc(r.mark) + "\"><td>" + cells.join("</td><td>") + "</td></tr>";
    });
    return "<p class=\"verdict\"><strong>" + esc(pair.verdict) + "</strong>: " + esc(pair.summary) + "</p>" +
      "<p class=\"pair-nights\">old: " + esc(data.nights[nights[0]]) + " (" + commitLinks(nights[0]) + "), new: " +
      esc(data.nights[nights[1]]) + " (" + commitLinks(nights[1]) + ")</p>" +
      "<table><thead><tr><th>" + head.map(esc).join("</th><th>") + "</th></tr></thead><tbody>" + rows.join("") +
      "</tbody></table><p class=\"help\">" + esc(pair.rule) + "</p>";
  }
  function showPair() {
    var target = document.getElementById("pair-table");
    var key = pairOld.value + "," + pairNew.value;
    if (!data.pairs[key]) {
      target.innerHTML = "<p>No two nights were compared when the page was built.</p>";
      return Promise.resolve();
    }
    state.pair = key;
    return load(data.pairs[key]).then(function (pair) {
      target.innerHTML = pairTable(pair, key);
      var chosen = target.querySelector("tr.chosen");
      if (chosen && state.scrollToRow) { chosen.scrollIntoView(); state.scrollToRow = false; }
      document.body.dataset.pairShown = key;
    });
  }
  pairOld.addEventListener("change", function () { state.pair = null; showPairOptions(); showPair().then(writeHash); });
  pairNew.addEventListener("change", function () { showPair().then(writeHash); });

  // ------------------------------------------------------------------ filters and state
  function fill(select, values, chosen) {
    select.innerHTML = values.map(function (v) {
      return "<option value=\"" + esc(v) + "\">" + esc(v) + "</option>";
    }).join("");
    select.value = chosen;
  }
  function unique(key) {
    var seen = [];
    data.groups.forEach(function (g) { if (seen.indexOf(g[key]) < 0) { seen.push(g[key]); } });
    return seen;
  }
  var selects = {suite: document.getElementById("f-suite"), mode: document.getElementById("f-mode"),
                 dtype: document.getElementById("f-dtype")};
  function showFilters() {
    Object.keys(selects).forEach(function (key) { fill(selects[key], unique(key), group()[key]); });
    fill(document.getElementById("f-range"), data.ranges.map(function (r) { return r[0]; }), state.range);
    var models = document.getElementById("model");
    fill(models, group().models, state.model);
    showPairOptions();
    document.querySelectorAll("table.summary").forEach(function (table) {
      table.classList.toggle("hidden", table.dataset.group !== group().label);
    });
  }
  function pickGroup(changed) {
    var wanted = {};
    Object.keys(selects).forEach(function (key) { wanted[key] = selects[key].value; });
    var exact = data.groups.findIndex(function (g) {
      return g.suite === wanted.suite && g.mode === wanted.mode && g.dtype === wanted.dtype;
    });
    state.group = exact >= 0 ? exact : Math.max(0, data.groups.findIndex(function (g) {
      return g[changed] === wanted[changed];
    }));
    if (group().models.indexOf(state.model) < 0) { state.model = group().models[0] || null; }
  }
  function readHash() {
    var found = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var eq = part.indexOf("=");
      if (eq > 0) { found[part.slice(0, eq)] = decodeURIComponent(part.slice(eq + 1)); }
    });
    if (found.group) {
      var g = data.groups.findIndex(function (x) { return x.label === found.group; });
      if (g >= 0) { state.group = g; }
    }
    if (found.range && data.ranges.some(function (r) { return r[0] === found.range; })) { state.range = found.range; }
    if (found.model && group().models.indexOf(found.model) >= 0) { state.model = found.model; }
    if (!state.model || group().models.indexOf(state.model) < 0) { state.model = group().models[0] || null; }
    var keys = Object.keys(data.pairs);
    if (found.compare && data.pairs[found.compare]) {
      state.pair = found.compare; state.row = found.row || null; state.scrollToRow = !!found.row;
    } else if (!state.pair && keys.length) {
      state.pair = keys[keys.length - 1];  // the newest two nights compared
    }
    return found;
  }
  function writeHash() {
    var parts = ["model=" + encodeURIComponent(state.model || "")];
    if (state.group) { parts.push("group=" + encodeURIComponent(group().label)); }
    if (state.range !== data.ranges[0][0]) { parts.push("range=" + encodeURIComponent(state.range)); }
    if (state.pair && state.pair !== Object.keys(data.pairs).slice(-1)[0]) { parts.push("compare=" + state.pair); }
    if (state.row) { parts.push("row=" + encodeURIComponent(state.row)); }
    history.replaceState(null, "", "#" + parts.join("&"));
  }

  function chain(fns) {  // one chart at a time, each after the browser had a chance to paint
    return fns.reduce(function (done, fn) {
      return done.then(function () {
        return new Promise(function (resolve) { setTimeout(resolve, 0); }).then(fn);
      });
    }, Promise.resolve());
  }
  function showAll() {
    document.body.dataset.ready = "false";
    showFilters();
    return speedupTrend().then(function () {
      return chain(TRENDS.concat([function () { return state.model ? showModel(state.model) : null; }, showPair]));
    }).then(function () { document.body.dataset.ready = "true"; });
  }

  Object.keys(selects).forEach(function (key) {
    selects[key].addEventListener("change", function () { pickGroup(key); writeHash(); showAll(); });
  });
  document.getElementById("f-range").addEventListener("change", function (event) {
    state.range = event.target.value; writeHash(); showAll();
  });
  document.getElementById("model").addEventListener("change", function (event) {
    state.model = event.target.value; writeHash();
    document.body.dataset.ready = "false";
    showModel(state.model).then(function () { document.body.dataset.ready = "true"; });
  });
  window.addEventListener("hashchange", function () {
    var before = [state.group, state.range, state.model].join("|");
    readHash();
    if ([state.group, state.range, state.model].join("|") === before) {
      showPairOptions();
      showPair();
      return;
    }
    showAll();
  });

  if (!data.groups.length) {
    document.body.dataset.ready = "true";
    return;
  }
  readHash();
  showFilters();
  speedupTrend().then(function () {
    requestAnimationFrame(function () {
      window.dashboardFirstChartMs = performance.now();
      document.body.dataset.firstChart = "true";
    });
    return chain(TRENDS.concat([function () { return state.model ? showModel(state.model) : null; }, showPair]));
  }).then(function () {
    window.dashboardReadyMs = performance.now();
    document.body.dataset.ready = "true";
  });
})();
