/* The inbox, live: a server-sent event stream says something of this account changed;
   the page then fetches itself again and swaps in the changed parts, keeping whatever
   the person is typing (an entry with focus or unsent text keeps its form). */
(function () {
  "use strict";

  var status = document.querySelector("[data-live-status]");
  var refreshing = false;
  var again = false;
  // Each panel's HTML as the server last sent it (before local times were applied).
  var served = {};
  document.querySelectorAll("[data-live-panel]").forEach(function (panel) {
    served[panel.getAttribute("data-live-panel")] = panel.outerHTML;
  });

  function setStatus(text, live) {
    if (!status) return;
    status.textContent = text;
    status.classList.toggle("off", !live);
  }

  function busy(node) {
    if (node.contains(document.activeElement) && document.activeElement !== document.body) {
      return true;
    }
    var inputs = node.querySelectorAll("input[type=text], textarea");
    for (var i = 0; i < inputs.length; i++) {
      if (inputs[i].value !== inputs[i].defaultValue) return true;
    }
    var selects = node.querySelectorAll("select");
    for (var j = 0; j < selects.length; j++) {
      var chosen = selects[j].options[selects[j].selectedIndex];
      if (chosen && !chosen.defaultSelected && selects[j].selectedIndex !== 0) return true;
    }
    return false;
  }

  /* Children keyed by data-key: new ones come in, gone ones go, busy ones keep their
     own form but take the new status, windows and (read-only) parts. */
  function merge(current, fresh) {
    var old = {};
    Array.prototype.forEach.call(current.children, function (child) {
      var key = child.getAttribute("data-key");
      if (key) old[key] = child;
    });
    var next = [];
    Array.prototype.forEach.call(fresh.children, function (child) {
      var key = child.getAttribute("data-key");
      var existing = key ? old[key] : null;
      if (existing && busy(existing)) {
        var parts = child.querySelectorAll("[data-live-part]");
        Array.prototype.forEach.call(parts, function (part) {
          var name = part.getAttribute("data-live-part");
          if (name === "actions") return; // the person is using these
          var mine = existing.querySelector('[data-live-part="' + name + '"]');
          if (mine) mine.innerHTML = part.innerHTML;
        });
        next.push(existing);
      } else if (existing && existing.outerHTML === child.outerHTML) {
        next.push(existing);
      } else {
        next.push(document.importNode(child, true));
      }
    });
    // Replace in order without disturbing the nodes kept.
    next.forEach(function (node, index) {
      var at = current.children[index];
      if (at !== node) current.insertBefore(node, at || null);
    });
    while (current.children.length > next.length) {
      current.removeChild(current.lastElementChild);
    }
  }

  function refresh() {
    if (refreshing) { again = true; return; }
    refreshing = true;
    fetch(location.href, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) {
        if (r.status === 401 || r.redirected) { location.reload(); throw new Error("auth"); }
        return r.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live-panel]").forEach(function (panel) {
          var name = panel.getAttribute("data-live-panel");
          var fresh = doc.querySelector('[data-live-panel="' + name + '"]');
          if (!fresh) return;
          // Unchanged on the server: leave the panel (and whatever is in it) alone.
          if (served[name] === fresh.outerHTML) return;
          var mine = panel.querySelector("[data-live]");
          var theirs = fresh.querySelector("[data-live]");
          if (mine && theirs &&
              mine.getAttribute("data-live") === theirs.getAttribute("data-live")) {
            merge(mine, theirs); // keyed entries: keep what the person is typing
            if (!fresh.querySelector("[data-empty]")) {
              panel.querySelectorAll("[data-empty]").forEach(function (e) { e.remove(); });
            }
            served[name] = fresh.outerHTML;
          } else if (!busy(panel)) {
            panel.replaceWith(document.importNode(fresh, true));
            served[name] = fresh.outerHTML;
          } // else: the person is using it; a later change brings it up to date

        });
        localTimes(document);
        document.documentElement.setAttribute("data-refreshed", String(Date.now()));
      })
      .catch(function () { /* the next change tries again */ })
      .then(function () {
        refreshing = false;
        if (again) { again = false; refresh(); }
      });
  }

  function localTimes(root) {
    root.querySelectorAll("time[datetime]").forEach(function (t) {
      var d = new Date(t.getAttribute("datetime"));
      if (!isNaN(d)) {
        t.textContent = d.toLocaleTimeString();
        t.title = d.toString();
      }
    });
  }

  function connect() {
    if (!window.EventSource) return;
    var source = new EventSource("/inbox/events");
    source.addEventListener("open", function () {
      setStatus("● live", true);
      document.documentElement.setAttribute("data-live-connected", "true");
      refresh(); // whatever changed between this page's render and the stream
    });
    source.addEventListener("change", refresh);
    source.addEventListener("error", function () {
      setStatus("reconnecting…", false);
      document.documentElement.removeAttribute("data-live-connected");
    });
  }

  // Writing to the agent: the sender follows the channel (a number, a slack member or
  // an email address). Delegated: live refreshes replace the panel and its controls.
  document.addEventListener("change", function (ev) {
    var channel = ev.target;
    var sender = document.getElementById("text-from");
    if (!channel || channel.id !== "text-channel" || !sender) return;
    var defaults = {
      phone: channel.getAttribute("data-human-phone"),
      slack: channel.getAttribute("data-human-slack"),
      email: channel.getAttribute("data-human-email"),
      telegram: channel.getAttribute("data-human-telegram"),
      teams: channel.getAttribute("data-human-teams"),
      discord: channel.getAttribute("data-human-discord")
    };
    var wanted = channel.value === "slack" ? defaults.slack
      : channel.value === "email" ? defaults.email
      : channel.value === "telegram" ? defaults.telegram
      : channel.value === "teams" ? defaults.teams
      : channel.value === "discord" ? defaults.discord : defaults.phone;
    // Only a default is replaced: what the person typed stays.
    if (sender.value === defaults.phone || sender.value === defaults.slack ||
        sender.value === defaults.email || sender.value === defaults.telegram ||
        sender.value === defaults.teams || sender.value === defaults.discord) {
      sender.value = wanted;
    }
  });

  // A notice from the last action fades after a while.
  var flash = document.querySelector("[data-flash]");
  if (flash) setTimeout(function () { flash.remove(); }, 8000);

  localTimes(document);
  connect();
})();
