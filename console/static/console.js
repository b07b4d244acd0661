// minikafka console: live regions over server-sent events, plots, live tail. No framework, no build.
(function () {
  "use strict";
  var banner = document.getElementById("banner");

  function setBanner(text) {
    if (!banner) return;
    banner.textContent = text || "";
    banner.hidden = !text;
  }

  // Plots: <div class="plot" data-src="/api/..."> gets {x: [ms], series: [{name, y, axis}], ylabel}.
  var lastPlot = {};
  function drawPlot(el) {
    if (typeof Plotly === "undefined") return;
    fetch(el.dataset.src, {headers: {"Accept": "application/json"}})
      .then(function (r) { return r.json(); })
      .then(function (data) {
        if (data.error) { setBanner(data.error); return; }
        var x = data.x.map(function (ms) { return new Date(ms); });
        var traces = data.series.map(function (s) {
          return {x: x, y: s.y, name: s.name, type: "scatter", mode: "lines", connectgaps: false,
                  yaxis: s.axis === "y2" ? "y2" : "y"};
        });
        var layout = {margin: {l: 60, r: 60, t: 10, b: 40}, showlegend: true, legend: {orientation: "h"},
                      xaxis: {type: "date"}, yaxis: {title: {text: data.ylabel || ""}, rangemode: "tozero"},
                      font: {color: "#1a1a1a"}};
        if (traces.some(function (t) { return t.yaxis === "y2"; })) {
          layout.yaxis2 = {title: {text: data.y2label || ""}, overlaying: "y", side: "right", rangemode: "tozero"};
        }
        Plotly.react(el, traces, layout, {displaylogo: false, responsive: true});
        el.dataset.points = String(data.x.length);
        el.dataset.last = JSON.stringify(data.series.map(function (s) { return s.y[s.y.length - 1]; }));
        lastPlot[el.id] = Date.now();
      })
      .catch(function () {});
  }
  var plots = Array.prototype.slice.call(document.querySelectorAll(".plot[data-src]"));
  plots.forEach(drawPlot);
  document.querySelectorAll("[data-plot-range]").forEach(function (select) {
    select.addEventListener("change", function () {
      var el = document.getElementById(select.dataset.plotRange);
      el.dataset.src = el.dataset.src.replace(/range=[^&]*/, "range=" + encodeURIComponent(select.value));
      drawPlot(el);
    });
  });

  document.querySelectorAll("[data-plot-partition]").forEach(function (select) {
    select.addEventListener("change", function () {
      var el = document.getElementById(select.dataset.plotPartition);
      var src = el.dataset.src.replace(/&partition=[^&]*/, "");
      el.dataset.src = select.value ? src + "&partition=" + encodeURIComponent(select.value) : src;
      drawPlot(el);
    });
  });

  // Live regions: the server sends changed regions of this page; plots follow its ticks.
  var live = document.body.dataset.live;
  if (live && window.EventSource) {
    var source = null;
    var connect = function () {
      source = new EventSource(live);
      source.addEventListener("region", function (e) {
        var msg = JSON.parse(e.data);
        var el = document.getElementById(msg.id);
        // Unchanged regions are left alone (the stream's first round repeats what the page shows);
        // a region holding the keyboard focus too, so it is never pulled away from a user.
        if (el && el.dataset.digest !== msg.digest) {
          var focused = document.activeElement && el.contains(document.activeElement);
          if (!focused) { el.innerHTML = msg.html; el.dataset.digest = msg.digest; }
        }
      });
      source.addEventListener("tick", function () {
        plots.forEach(function (el) { if (!lastPlot[el.id] || Date.now() - lastPlot[el.id] > 5000) drawPlot(el); });
      });
      source.addEventListener("banner", function (e) { setBanner(JSON.parse(e.data)); });
      source.onerror = function () { setBanner("The console itself does not answer; retrying…"); };
      source.onopen = function () { setBanner(""); };
    };
    connect();
    // A page kept in the back/forward cache keeps its stream open, and a browser opens at most six
    // connections to a server over HTTP/1.1: the seventh page waited a minute. Close on leaving.
    window.addEventListener("pagehide", function () { if (source) { source.close(); source = null; } });
    window.addEventListener("pageshow", function (e) { if (e.persisted && !source) connect(); });
    // Background tabs give their connection back too (the same six-connection limit), and catch
    // up when shown again: the first events re-send every region.
    document.addEventListener("visibilitychange", function () {
      if (document.hidden && source) { source.close(); source = null; } else if (!document.hidden && !source) connect();
    });
  }

  // Live tail of a topic.
  var toggle = document.getElementById("tail-toggle");
  if (toggle) {
    var tail = null;
    var status = document.getElementById("tail-status");
    var body = document.getElementById("records");
    toggle.addEventListener("click", function () {
      if (tail) {
        tail.close(); tail = null;
        toggle.setAttribute("aria-pressed", "false"); toggle.textContent = "Live tail";
        status.textContent = "";
        return;
      }
      tail = new EventSource(toggle.dataset.tail);
      toggle.setAttribute("aria-pressed", "true"); toggle.textContent = "Stop live tail";
      status.textContent = "connecting…";
      tail.addEventListener("ready", function () { status.textContent = "waiting for new records"; });
      tail.addEventListener("records", function (e) {
        var empty = body.querySelector("tr.empty");
        if (empty) empty.remove();
        var holder = document.createElement("tbody");
        holder.innerHTML = JSON.parse(e.data).html;
        var rows = Array.prototype.slice.call(holder.children).reverse();
        rows.forEach(function (row) { row.classList.add("fresh"); body.insertBefore(row, body.firstChild); });
        while (body.children.length > 500) body.removeChild(body.lastChild);
        status.textContent = rows.length + " new record(s)";
      });
      tail.onerror = function () { status.textContent = "tail interrupted; retrying…"; };
    });
    window.addEventListener("pagehide", function () { if (tail) toggle.click(); });  // see pagehide above
  }
})();
