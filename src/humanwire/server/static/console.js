/* The console's queue, kept up to date: every 5 seconds while the page is shown (and at
   once when it is shown again), the page fetches its own list (its fragment route, with
   the same filters) and swaps in what changed. A request the person is using (focus in
   it, or a comment typed) keeps its own element until they are done; new requests are
   announced in the page's status line. Without this script the page is the same, less
   the updates: reload to see new requests. */
(function () {
  "use strict";

  var EVERY = 5000;
  var panel = document.querySelector("[data-live-src]");
  if (!panel || !window.fetch || !window.DOMParser) return;
  var src = panel.getAttribute("data-live-src");
  var heading = panel.querySelector("[data-queue-heading]");
  var announce = panel.querySelector("[data-live-announce]");
  var stopped = false;
  var fetching = false;
  // Each request's element as the server last sent it, and the list's whole HTML.
  var served = {};
  var servedList = null;

  function current() { return panel.querySelector("[data-live-queue]"); }

  function remember(list) {
    servedList = list.outerHTML;
    list.querySelectorAll("[data-approval]").forEach(function (item) {
      served[item.getAttribute("data-approval")] = item.outerHTML;
    });
  }
  remember(current());

  function busy(node) {
    var active = document.activeElement;
    if (active && active !== document.body && node.contains(active)) {
      var tag = active.tagName;
      // Typing or about to press a button: leave it; a link or summary may be refreshed.
      if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || tag === "BUTTON") {
        return true;
      }
    }
    var inputs = node.querySelectorAll("input[type=text], textarea");
    for (var i = 0; i < inputs.length; i++) {
      if (inputs[i].value !== inputs[i].defaultValue) return true;
    }
    return false;
  }

  function plural(n, one, many) { return n + " " + (n === 1 ? one : many); }

  function say(text) {
    if (!announce || !text) return;
    announce.textContent = text;
  }

  /* The fresh list in place of the shown one: entries keyed by data-approval, the ones
     the person is using kept, an element with focus kept or focus moved to the heading
     when its request left the queue. */
  function swap(fresh) {
    var mine = current();
    var active = document.activeElement;
    var focusGone = active && active !== document.body && mine.contains(active);
    var shown = {};
    mine.querySelectorAll("[data-approval]").forEach(function (item) {
      shown[item.getAttribute("data-approval")] = item;
    });
    var freshList = fresh.querySelector("[data-queue]");
    var list = mine.querySelector("[data-queue]");
    var added = 0;
    var gone = 0;
    var keep = {};
    if (freshList) {
      if (!list) {
        list = document.createElement("ul");
        list.className = freshList.className;
        list.setAttribute("data-queue", "");
      }
      var next = [];
      Array.prototype.forEach.call(freshList.children, function (child) {
        var iid = child.getAttribute("data-approval");
        var existing = shown[iid];
        if (!existing) added++;
        if (existing && (served[iid] === child.outerHTML || busy(existing))) {
          next.push(existing);
          keep[iid] = true;
          if (served[iid] !== child.outerHTML) servedList = null; // to redo when free
        } else {
          var node = document.importNode(child, true);
          if (existing) {
            keep[iid] = true;
            // The details the person opened stay open.
            var before = existing.querySelectorAll("details");
            var after = node.querySelectorAll("details");
            for (var d = 0; d < before.length && d < after.length; d++) {
              after[d].open = before[d].open;
            }
          }
          next.push(node);
          served[iid] = child.outerHTML;
        }
      });
      Object.keys(shown).forEach(function (iid) { if (!keep[iid]) gone++; });
      next.forEach(function (node, index) {
        var at = list.children[index];
        if (at !== node) list.insertBefore(node, at || null);
      });
      while (list.children.length > next.length) list.removeChild(list.lastElementChild);
      if (list.parentNode !== mine) {
        mine.innerHTML = "";
        mine.appendChild(list);
      }
    } else {
      gone = Object.keys(shown).length;
      mine.replaceWith(document.importNode(fresh, true));
      mine = current();
    }
    mine.setAttribute("data-count", fresh.getAttribute("data-count"));
    if (heading) heading.textContent = "Waiting for you (" + fresh.getAttribute("data-count") + ")";
    if (focusGone && !document.contains(active) && heading) {
      heading.focus(); // its request left the queue: back to the top of the list
    } else if (focusGone && document.activeElement !== active) {
      active.focus({ preventScroll: true }); // a kept element moved: focus stays on it
    }
    var parts = [];
    if (added) parts.push(plural(added, "new request", "new requests"));
    if (gone) parts.push(plural(gone, "request left the queue", "requests left the queue"));
    say(parts.join(", "));
    if (servedList !== null) servedList = fresh.outerHTML;
  }

  function refresh() {
    if (stopped || fetching || document.visibilityState === "hidden") return;
    fetching = true;
    fetch(src, {
      credentials: "same-origin",
      redirect: "manual",
      headers: { Accept: "text/html" },
    })
      .then(function (r) {
        if (r.status === 401 || r.status === 403 || r.type === "opaqueredirect") {
          stopped = true;
          say("You are signed out: reload the page to sign in again.");
          throw new Error("signed out");
        }
        if (!r.ok) throw new Error(String(r.status));
        return r.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.querySelector("[data-live-queue]");
        if (!fresh || fresh.outerHTML === servedList) return;
        swap(fresh);
        document.documentElement.setAttribute("data-queue-refreshed", String(Date.now()));
      })
      .catch(function () { /* the next round tries again */ })
      .then(function () { fetching = false; });
  }

  setInterval(refresh, EVERY);
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") refresh();
  });
})();
