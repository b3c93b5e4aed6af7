/* spark-topics browse: the page of a topic model. Plain JavaScript, no network: data/model.js holds the summary,
   data/topics/<k>.js one topic each, loaded by <script> tags when the topic is opened (works from file://). */
(function () {
  "use strict";
  var M = window.SPARK_TOPICS_MODEL;
  var topics = {};          // k -> loaded record
  var waiting = {};         // k -> callbacks waiting for the record
  var lambda = M.lambda;
  var storeKey = "spark-topics-labels:" + M.card.directory;
  var labels = readLabels();

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (a) {
      if (a === "text") e.textContent = attrs[a]; else e.setAttribute(a, attrs[a]);
    });
    (children || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    Object.keys(attrs || {}).forEach(function (a) { e.setAttribute(a, attrs[a]); });
    return e;
  }
  function fmt(x, digits) { return x === null || x === undefined ? "n/a" : Number(x).toFixed(digits); }
  function pct(x) { return (100 * x).toFixed(x < 0.001 ? 3 : 1) + "%"; }

  function readLabels() {
    try { return JSON.parse(window.localStorage.getItem(storeKey) || "{}"); } catch (e) { return {}; }
  }
  function saveLabels() {
    try { window.localStorage.setItem(storeKey, JSON.stringify(labels)); } catch (e) { /* storage off: kept in page */ }
  }

  // ------------------------------------------------------------------------------------------------ model card
  function card() {
    var c = M.card, box = document.getElementById("card");
    box.appendChild(el("h2", {text: "Model"}));
    var rows = [["model", c.model], ["topics (K)", c.topics], ["vocabulary (V)", c.vocabulary],
                ["documents", c.documents], ["directory", c.directory]];
    if (c.languages && c.languages.length) rows.push(["languages", c.languages.join(", ")]);
    if (c.root) rows.push(["model root", c.root + " (version " + c.version + ")"]);
    if (c.alpha !== undefined) rows.push(["alpha", typeof c.alpha === "object"
      ? "sum " + fmt(c.alpha.sum, 3) + ", min " + fmt(c.alpha.min, 4) + ", max " + fmt(c.alpha.max, 4) : c.alpha]);
    if (c.coherence) Object.keys(c.coherence.mean).forEach(function (l) {
      rows.push(["coherence" + (l ? " [" + l + "]" : ""),
                 fmt(c.coherence.mean[l], 4) + " (" + c.coherence.measure + ")"]);
    });
    Object.keys(c.heldout || {}).forEach(function (k) { rows.push([k, JSON.stringify(c.heldout[k])]); });
    Object.keys(c.settings || {}).forEach(function (k) { rows.push([k, String(c.settings[k])]); });
    box.appendChild(table(rows));
    if (c.trace) {
      box.appendChild(el("h3", {text: c.trace.name + " per iteration"}));
      box.appendChild(line(c.trace.values, "trace", 380, 90));
    }
    M.salient.forEach(function (s) {
      box.appendChild(el("h3", {text: "most salient words" + (s.language ? " [" + s.language + "]" : "")}));
      box.appendChild(el("p", {"class": "salient", text: s.terms.join(" ")}));
    });
  }
  function table(rows) {
    var t = el("table", {"class": "kv"});
    rows.forEach(function (r) {
      t.appendChild(el("tr", {}, [el("td", {text: r[0]}), el("td", {text: String(r[1])})]));
    });
    return t;
  }
  function line(values, cls, w, h) {
    var v = values.filter(function (x) { return x !== null && isFinite(x); });
    var s = svg("svg", {"class": cls, viewBox: "0 0 " + w + " " + h, preserveAspectRatio: "none"});
    if (v.length < 2) return s;
    var lo = Math.min.apply(null, v), hi = Math.max.apply(null, v), span = hi - lo || 1;
    var pts = v.map(function (x, i) {
      return (i * (w - 4) / (v.length - 1) + 2).toFixed(1) + "," + (h - 3 - (x - lo) / span * (h - 6)).toFixed(1);
    });
    s.appendChild(svg("polyline", {points: pts.join(" ")}));
    var t = svg("title", {});
    t.textContent = "from " + lo.toPrecision(5) + " to " + hi.toPrecision(5);
    s.appendChild(t);
    return s;
  }

  // ------------------------------------------------------------------------------------------------------- map
  function map() {
    var s = document.getElementById("map"), T = M.topics, size = 400;
    var xs = T.map(function (t) { return t.x; }), ys = T.map(function (t) { return t.y; });
    var maxR = Math.max(5, Math.min(40, 300 / Math.sqrt(T.length))), pad = maxR + 4;
    var maxShare = Math.max.apply(null, T.map(function (t) { return t.share; })) || 1;
    // one scale for both axes (distances stay comparable), each axis centred
    var span = Math.max(Math.max.apply(null, xs) - Math.min.apply(null, xs),
                        Math.max.apply(null, ys) - Math.min.apply(null, ys)) || 1;
    var mx = (Math.max.apply(null, xs) + Math.min.apply(null, xs)) / 2;
    var my = (Math.max.apply(null, ys) + Math.min.apply(null, ys)) / 2;
    s.appendChild(svg("line", {x1: size / 2, y1: 0, x2: size / 2, y2: size}));
    s.appendChild(svg("line", {x1: 0, y1: size / 2, x2: size, y2: size / 2}));
    var order = T.slice().sort(function (a, b) { return b.share - a.share; });   // small circles on top
    order.forEach(function (t) {
      var cx = size / 2 + (t.x - mx) / span * (size - 2 * pad), cy = size / 2 - (t.y - my) / span * (size - 2 * pad);
      var c = svg("circle", {cx: cx.toFixed(1), cy: cy.toFixed(1), r: (maxR * Math.sqrt(t.share / maxShare)).toFixed(1),
                             "data-topic": t.k, id: "map-" + t.k});
      var title = svg("title", {}); title.textContent = "topic " + t.k + ": " + t.label + " (" + pct(t.share) + ")";
      c.appendChild(title);
      c.addEventListener("click", function () { go(t.k); });
      s.appendChild(c);
      if (T.length <= 60) {     // more numbers than that only clutter: the circle's title names it
        var label = svg("text", {x: cx.toFixed(1), y: cy.toFixed(1)}); label.textContent = t.k; s.appendChild(label);
      }
    });
  }

  // ---------------------------------------------------------------------------------------------- topic list
  function list() {
    var box = document.getElementById("topics");
    var maxShare = Math.max.apply(null, M.topics.map(function (t) { return t.share; }));
    M.topics.forEach(function (t) {
      var input = el("input", {"class": "label", type: "text", "aria-label": "label of topic " + t.k,
                               placeholder: t.names || "label this topic"});
      input.value = labels[t.k] || "";
      input.addEventListener("click", function (e) { e.stopPropagation(); });
      input.addEventListener("input", function () {
        if (input.value.trim()) labels[t.k] = input.value.trim(); else delete labels[t.k];
        saveLabels();
      });
      var bar = el("div", {"class": "share", title: pct(t.share) + " of the tokens"}, [el("span", {})]);
      bar.firstChild.style.width = (100 * t.share / maxShare).toFixed(1) + "%";
      var coh = Object.keys(t.coherence || {}).map(function (l) { return fmt(t.coherence[l], 3); }).join(" / ");
      var head = el("div", {"class": "topic-head"}, [
        el("span", {"class": "topic-id", text: "#" + t.k}), input,
        el("div", {}, [bar, el("span", {"class": "share-text", text: pct(t.share)})]),
        el("span", {"class": "top-words", text: t.label}),
        el("span", {"class": "coherence", title: "NPMI coherence", text: coh ? "npmi " + coh : ""})]);
      head.addEventListener("click", function () {
        var sec = document.getElementById("topic-" + t.k);
        if (sec.classList.contains("open")) { sec.classList.remove("open"); mark(t.k, false); } else go(t.k);
      });
      var sec = el("section", {"class": "topic", id: "topic-" + t.k, "data-topic": t.k},
                   [head, el("div", {"class": "topic-body"})]);
      box.appendChild(sec);
    });
  }
  function mark(k, on) {
    var c = document.getElementById("map-" + k);
    if (c) c.classList.toggle("open", on);
  }
  function go(k) {
    if (window.location.hash === "#topic-" + k) open(k, true); else window.location.hash = "topic-" + k;
  }
  function open(k, scroll) {
    var sec = document.getElementById("topic-" + k);
    if (!sec) return;
    sec.classList.add("open");
    mark(k, true);
    load(k, function () { render(k); if (scroll) sec.scrollIntoView({block: "start"}); });
    if (scroll) sec.scrollIntoView({block: "start"});
  }
  function load(k, done) {
    if (topics[k]) { done(); return; }
    if (waiting[k]) { waiting[k].push(done); return; }
    waiting[k] = [done];
    var s = document.createElement("script");
    s.src = "data/topics/" + k + ".js";
    s.onerror = function () { console.warn("could not load " + s.src); };
    document.body.appendChild(s);
  }
  window.SPARK_TOPICS_TOPIC = function (record) {
    topics[record.k] = record;
    (waiting[record.k] || []).forEach(function (f) { f(); });
    delete waiting[record.k];
  };

  // ------------------------------------------------------------------------------------------- a topic's body
  function ranked(panel) {
    var idx = panel.terms.map(function (_, i) { return i; });
    function rel(i) {
      var p = panel.log_phi[i], l = panel.log_lift[i];
      if (p === null || l === null) return -Infinity;
      return lambda * p + (1 - lambda) * l;
    }
    idx.sort(function (a, b) { return rel(b) - rel(a) || a - b; });
    return idx.slice(0, M.words);
  }
  function words(t, panel) {
    var share = M.topics[t.k].share, order = ranked(panel);
    var all = order.map(function (i) { return Math.exp(panel.log_phi[i] - panel.log_lift[i]); });   // p(w)
    var here = order.map(function (i) { return share * Math.exp(panel.log_phi[i]); });            // p(w, k)
    var top = Math.max.apply(null, all) || 1;
    var ol = el("ol", {"class": "words", "data-topic": t.k, "data-language": panel.language});
    order.forEach(function (i, j) {
      var bars = el("div", {"class": "bars", title: "p(w | k) = " + Math.exp(panel.log_phi[i]).toPrecision(3) +
                    ", lift = " + Math.exp(panel.log_lift[i]).toPrecision(3)},
                    [el("div", {"class": "all"}), el("div", {"class": "here"})]);
      bars.children[0].style.width = (100 * all[j] / top).toFixed(1) + "%";
      bars.children[1].style.width = (100 * Math.min(here[j], all[j]) / top).toFixed(1) + "%";
      var linked = panel.linked && panel.linked[i] && panel.linked[i].length
        ? el("span", {"class": "linked", text: " ~ " + panel.linked[i].join(", ")}) : null;
      ol.appendChild(el("li", {"data-term": panel.terms[i]},
                        [el("span", {"class": "term", text: panel.terms[i]}, [linked]), bars]));
    });
    return ol;
  }
  function render(k) {
    var t = topics[k], body = document.querySelector("#topic-" + k + " .topic-body");
    body.textContent = "";
    var panels = el("div", {"class": "panels"});
    t.panels.forEach(function (p) {
      panels.appendChild(el("div", {"class": "panel"}, [
        el("h3", {text: "words" + (p.language ? " [" + p.language + "]" : "") + " by relevance"}), words(t, p)]));
    });
    body.appendChild(panels);
    body.appendChild(el("div", {"class": "legend"}, [
      el("i", {style: "background:var(--bar)"}), document.createTextNode("the word's frequency in the corpus"),
      el("i", {style: "background:var(--accent)"}), document.createTextNode("its estimated frequency in this topic")]));
    if (t.cluster) body.appendChild(el("p", {text: t.cluster.documents +
      " documents sampled into this cluster (mean membership probability " +
                                        fmt(t.cluster.mean_probability, 3) + ")"}));
    if (t.clusters && t.clusters.length) {
      body.appendChild(el("h3", {text: "clusters of documents that give this topic the largest share of their tokens"}));
      body.appendChild(bars(t.clusters.map(function (c) { return c.share; }),
        t.clusters.map(function (c) { return "cluster " + c.cluster; }),
        t.clusters.map(function (c) {
          return "cluster " + c.cluster + " (" + c.documents + " documents): " + fmt(c.share, 3) + " of its tokens";
        })));
    }
    Object.keys(t.metadata || {}).forEach(function (name) {
      var m = t.metadata[name];
      body.appendChild(el("h3", {"data-metadata": name,
                                 text: "topic share by " + name + " (mean proportion of its documents)"}));
      body.appendChild(bars(m.share, m.values, m.values.map(function (v, i) {
        return name + " " + v + ": " + fmt(m.share[i], 3) + " (" + m.documents[i] + " documents)";
      })));
    });
    if (t.flow) {
      body.appendChild(el("h3", {text: "topic flow: mean proportion by segment position"}));
      body.appendChild(bars(t.flow.mean, t.flow.mean.map(function (_, i) { return "segment " + (i + 1); }),
        t.flow.mean.map(function (v, i) {
          return "segment " + (i + 1) + ": " + fmt(v, 3) + " (" + t.flow.segments[i] + " segments)";
        })));
    }
    if (t.drift) {
      body.appendChild(el("h3", {text: "drift across versions (Hellinger distance to the previous version)"}));
      var names = t.drift.versions.slice(1).map(function (v) { return v.split("-")[0]; });
      body.appendChild(bars(t.drift.hellinger, names, t.drift.versions.slice(1).map(function (v, i) {
        return t.drift.versions[i] + " -> " + v + ": " + fmt(t.drift.hellinger[i], 4); })));
    }
    body.appendChild(el("h3", {text: "related topics (Jensen-Shannon divergence)"}));
    var rel = el("div", {"class": "related"});
    t.related.forEach(function (r) {
      rel.appendChild(el("a", {href: "#topic-" + r[0], "data-related": r[0],
                               text: "#" + r[0] + " " + M.topics[r[0]].label + " (" + fmt(r[1], 3) + ")"}));
    });
    body.appendChild(rel);
    body.appendChild(el("h3", {text: "top documents"}));
    var docs = el("table", {"class": "docs"});
    t.docs.forEach(function (d) {
      var snip = d.snippet ? Object.keys(d.snippet).map(function (l) {
        return (l ? "[" + l + "] " : "") + d.snippet[l];
      }).join("  ") : "";
      var cells = [el("td", {"class": "id", text: d.id}), el("td", {"class": "p", text: pct(d.p)}),
                   el("td", {text: snip})];
      if (t.flow && t.flow.docs[d.id]) cells.push(el("td", {}, [line(t.flow.docs[d.id], "spark", 90, 18)]));
      docs.appendChild(el("tr", {}, cells));
    });
    body.appendChild(docs);
  }
  function bars(values, names, titles) {
    // bars from 0 to the largest value (labelled when there are few), one per position
    var w = 520, h = 90, top = Math.max.apply(null, values) || 1, bw = w / Math.max(values.length, 1), base = h - 14;
    var s = svg("svg", {"class": "flow", viewBox: "0 0 " + w + " " + h});
    values.forEach(function (v, i) {
      var bh = (v || 0) / top * (base - 12);
      var r = svg("rect", {x: (i * bw + 1).toFixed(1), width: Math.max(Math.min(bw - 2, 160), 1).toFixed(1),
                           y: (base - bh).toFixed(1), height: bh.toFixed(1)});
      var title = svg("title", {}); title.textContent = titles[i];
      r.appendChild(title); s.appendChild(r);
      if (values.length <= 20) {
        var middle = (i * bw + 1 + Math.min(bw - 2, 160) / 2).toFixed(1);
        var value = svg("text", {x: middle, y: (base - bh - 3).toFixed(1)}); value.textContent = fmt(v, 2);
        var pos = svg("text", {x: middle, y: h - 2}); pos.textContent = names[i];
        s.appendChild(value); s.appendChild(pos);
      }
    });
    return s;
  }

  // ---------------------------------------------------------------------------------------- controls, labels
  function rerender() {
    Object.keys(topics).forEach(function (k) {
      if (document.getElementById("topic-" + k).classList.contains("open")) render(Number(k));
    });
  }
  function controls() {
    var slider = document.getElementById("lambda"), out = document.getElementById("lambda-value");
    slider.value = lambda; out.textContent = lambda.toFixed(2);
    slider.addEventListener("input", function () {
      lambda = Number(slider.value); out.textContent = lambda.toFixed(2); rerender();
    });
    document.getElementById("filter").addEventListener("input", function (e) {
      var q = e.target.value.trim().toLowerCase();
      M.topics.forEach(function (t) {
        var hit = !q || (t.top + " " + (labels[t.k] || "") + " #" + t.k).toLowerCase().indexOf(q) >= 0;
        document.getElementById("topic-" + t.k).classList.toggle("hidden", !hit);
        document.getElementById("map-" + t.k).classList.toggle("hidden", !hit);
      });
    });
    document.getElementById("download-csv").addEventListener("click", function () {
      var rows = ["topic,label,top_words"].concat(M.topics.map(function (t) {
        return [t.k, labels[t.k] || "", t.label].map(csv).join(",");
      }));
      download("labels.csv", rows.join("\n") + "\n", "text/csv");
    });
    document.getElementById("download-json").addEventListener("click", function () {
      download("labels.json", JSON.stringify(M.topics.map(function (t) {
        return {topic: t.k, label: labels[t.k] || null, top_words: t.label};
      }), null, 1), "application/json");
    });
  }
  function csv(v) { v = String(v); return /[",\n]/.test(v) ? '"' + v.replace(/"/g, '""') + '"' : v; }
  function download(name, text, type) {
    var a = el("a", {href: URL.createObjectURL(new Blob([text], {type: type})), download: name});
    document.body.appendChild(a); a.click(); a.remove();
  }
  function fromHash() {
    var m = /^#topic-(\d+)$/.exec(window.location.hash);
    if (m) open(Number(m[1]), true);
  }

  card(); map(); list(); controls();
  window.addEventListener("hashchange", fromHash);
  fromHash();
  window.SPARK_TOPICS_READY = true;
})();
