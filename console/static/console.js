// GoRunner console: makes a run page live through the run's event stream (Server-Sent
// Events). Everything else works without this script. No libraries, no other origins.
(function () {
  "use strict";
  var root = document.getElementById("run");
  if (!root || /^(completed|failed|cancelled)$/.test(root.dataset.status)) {
    return;
  }
  var url = root.dataset.events + "?after=" + encodeURIComponent(root.dataset.eventId);
  var source = new EventSource(url);
  var note = document.getElementById("live-note");
  if (note) {
    note.textContent = "Live: this page follows the run as it changes.";
  }

  function when(iso) {
    return iso ? iso.replace("T", " ").slice(0, 19) + "Z" : "";
  }
  function took(start, end) {
    if (!start || !end) {
      return "";
    }
    var ms = Date.parse(end) - Date.parse(start);
    return ms < 1000 ? ms + "ms" : (ms / 1000).toFixed(3).replace(/\.?0+$/, "") + "s";
  }
  function text(el, value) {
    if (el) {
      el.textContent = value;
    }
  }
  function badge(el, status) {
    if (el) {
      el.className = "badge " + status;
      el.textContent = status;
    }
  }
  function errorBox(el, err) {
    if (!el) {
      return;
    }
    el.textContent = "";
    if (err) {
      var p = document.createElement("p");
      p.className = "step-error";
      var code = document.createElement("strong");
      code.textContent = err.code;
      p.appendChild(code);
      p.appendChild(document.createTextNode(" " + err.message + (err.step ? " (step " + err.step + ")" : "")));
      el.appendChild(p);
    }
  }
  function outputBox(el, output) {
    if (!el) {
      return;
    }
    el.textContent = "";
    if (output !== undefined && output !== null) {
      var details = document.createElement("details");
      var summary = document.createElement("summary");
      summary.textContent = "Output";
      var pre = document.createElement("pre");
      pre.className = "code";
      pre.textContent = JSON.stringify(output, null, 2);
      details.appendChild(summary);
      details.appendChild(pre);
      el.appendChild(details);
    }
  }
  function field(li, name) {
    return li.querySelector('[data-field="' + name + '"]');
  }

  source.addEventListener("step", function (ev) {
    var data = JSON.parse(ev.data);
    var li = document.getElementById("step-" + data.index);
    if (!li) {
      return;
    }
    var s = data.step;
    li.className = "step " + s.status;
    badge(field(li, "status"), s.status);
    text(field(li, "stepId"), s.stepId);
    text(field(li, "attempts"), String(s.attempts));
    text(field(li, "startedAt"), when(s.startedAt));
    text(field(li, "took"), took(s.startedAt, s.finishedAt));
    errorBox(field(li, "error"), s.error);
    outputBox(field(li, "output"), s.output);
    var bar = document.querySelector('rect[data-index="' + data.index + '"]');
    if (bar) {
      bar.setAttribute("class", s.status);
      bar.dataset.start = s.startedAt || "";
      bar.dataset.end = s.finishedAt || "";
      axis();
    }
  });

  // axis places every bar of the time axis again: from the earliest start to the latest end
  // (or now, while a step runs).
  function axis() {
    var bars = document.querySelectorAll("rect[data-index]");
    var now = new Date().toISOString(), start = null, end = null;
    bars.forEach(function (b) {
      if (b.dataset.start && (!start || b.dataset.start < start)) {
        start = b.dataset.start;
      }
      var e = b.dataset.start ? b.dataset.end || now : "";
      if (e && (!end || e > end)) {
        end = e;
      }
    });
    if (!start || !end) {
      return;
    }
    var span = Date.parse(end) - Date.parse(start);
    text(document.getElementById("g-span"), took(start, end));
    bars.forEach(function (b) {
      if (!b.dataset.start || span <= 0) {
        return;
      }
      var s = Date.parse(b.dataset.start) - Date.parse(start);
      var d = Date.parse(b.dataset.end || now) - Date.parse(b.dataset.start);
      var x = 100 * s / span, w = Math.max(100 * d / span, 0.5);
      b.setAttribute("x", x.toFixed(2) + "%");
      b.setAttribute("width", Math.min(w, 100 - x).toFixed(2) + "%");
      text(document.getElementById("g-took-" + b.dataset.index), took(b.dataset.start, b.dataset.end || now));
    });
  }

  function status(ev) {
    var data = JSON.parse(ev.data);
    var waits = document.getElementById("waits");
    if (data.status === "waiting" && !waits) {
      window.location.reload(); // the server renders what it waits for, and the resume forms with their CSRF token
      return;
    }
    if (waits && data.status !== "waiting" && data.status !== "queued") {
      waits.remove();
    }
    root.dataset.started = data.startedAt || "";
    root.dataset.status = data.status;
    badge(document.getElementById("run-status"), data.status);
    text(document.getElementById("run-took"), took(data.startedAt, data.finishedAt));
    errorBox(document.getElementById("run-error"), data.error);
    var out = document.getElementById("run-output");
    text(out, data.output === undefined || data.output === null ? "" : JSON.stringify(data.output, null, 2));
  }
  source.addEventListener("status", status);
  source.addEventListener("end", function (ev) {
    status(ev);
    source.close();
    text(note, "The run has ended. ");
    var again = document.createElement("a");
    again.href = window.location.pathname;
    again.textContent = "Reload for its actions (rerun, delete).";
    note.appendChild(again);
    var cancel = document.getElementById("cancel");
    if (cancel) {
      cancel.remove();
    }
    window.clearInterval(ticking);
  });

  // "Took" counts on while the run runs.
  var ticking = window.setInterval(function () {
    if (root.dataset.started && !/^(completed|failed|cancelled)$/.test(root.dataset.status)) {
      text(document.getElementById("run-took"), took(root.dataset.started, new Date().toISOString()) + " so far");
    }
  }, 1000);
})();
