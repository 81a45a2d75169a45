/* The form page: the same validation rules the server applies (it stays the
   authority), the live countdown of waitTime / followUpTime, and the searchable
   country-code picker. Everything here is progressive: without it the page still
   works with native controls and server-side validation. */
(function () {
  "use strict";

  var form = document.querySelector("form.hw-form");
  if (!form) return;
  var config = JSON.parse(form.getAttribute("data-config") || "{}");
  var messages = config.messages || {};
  form.noValidate = true; // our messages replace the browser's own bubbles

  // -- country data for phone numbers (loaded once, only when a phone field exists) --
  var countryByRegion = null;
  var regionsByCode = null;
  var regexCache = {};

  function fullMatch(pattern) {
    var key = "^(?:" + pattern + ")$";
    if (!regexCache[key]) regexCache[key] = new RegExp(key);
    return regexCache[key];
  }

  function loadCountries() {
    if (!document.querySelector("[data-phone]") || !window.fetch) return;
    fetch(config.countries, { credentials: "omit" })
      .then(function (r) { return r.json(); })
      .then(function (list) {
        countryByRegion = {};
        regionsByCode = {};
        list.forEach(function (c) {
          countryByRegion[c.region] = c;
          (regionsByCode[c.code] = regionsByCode[c.code] || []).push(c);
        });
        form.setAttribute("data-countries-loaded", "");
      })
      .catch(function () { /* the server still validates */ });
  }

  function validNational(country, digits) {
    return fullMatch(country.general).test(digits) && fullMatch(country.valid).test(digits);
  }

  function nationalNumber(country, digits) {
    // Strip the trunk prefix ("0" in 020 7946 0018) when what remains is valid.
    if (country.prefix) {
      var m = new RegExp("^(?:" + country.prefix + ")").exec(digits);
      if (m && m[0].length) {
        var rest = digits.slice(m[0].length);
        if (validNational(country, rest)) return rest;
      }
    }
    return validNational(country, digits) ? digits : null;
  }

  /* {e164} or {error}; {e164: null} when the data is not loaded (server decides). */
  function phoneE164(fieldEl, typed) {
    var compact = typed.replace(/[\s().\-\/]/g, "");
    if (compact.indexOf("00") === 0) compact = "+" + compact.slice(2);
    if (compact.charAt(0) === "+") {
      var digits = compact.slice(1);
      if (!/^\d{4,17}$/.test(digits)) return { error: messages.phone };
      if (!regionsByCode) return { e164: null };
      for (var len = 1; len <= 3; len++) {
        var candidates = regionsByCode[digits.slice(0, len)] || [];
        for (var i = 0; i < candidates.length; i++) {
          var national = nationalNumber(candidates[i], digits.slice(len));
          if (national !== null) return { e164: "+" + digits.slice(0, len) + national };
        }
      }
      return { error: messages.phone };
    }
    if (!/^\d+$/.test(compact)) return { error: messages.phone };
    var select = fieldEl.querySelector("select.country");
    if (!select || !select.value) return { error: messages.phoneCountry };
    if (!countryByRegion) return { e164: null };
    var country = countryByRegion[select.value];
    if (!country) return { error: messages.phoneCountry };
    var nat = nationalNumber(country, compact);
    return nat === null ? { error: messages.phone } : { e164: "+" + country.code + nat };
  }

  // -- the rules, as validate.py applies them -----------------------------------

  function addressMissing(text) {
    var a = config.address;
    var parts = text.split(new RegExp(a.separator)).map(function (p) { return p.trim(); })
      .filter(function (p) { return p.length > 0; });
    var first = parts.length ? parts[0] : "";
    var missing = [];
    var house = new RegExp(a.houseNumber);
    if (!parts.slice(0, 2).some(function (p) { return house.test(p); })) {
      missing.push(a.missing.houseNumber);
    }
    if (!new RegExp(a.streetName).test(first)) missing.push(a.missing.streetName);
    if (!new RegExp(a.streetName).test(parts.slice(1).join(" "))) missing.push(a.missing.town);
    if (a.requirePostalCode && !new RegExp(a.postalCode).test(text)) {
      missing.push(a.missing.postalCode);
    }
    return missing;
  }

  function missingMessage(missing) {
    var listed = missing.length === 1 ? missing[0]
      : missing.slice(0, -1).join(", ") + " and " + missing[missing.length - 1];
    return "This address is missing " + listed + ".";
  }

  function emailOk(text) {
    if (!new RegExp(config.email.pattern).test(text)) return false;
    var labels = text.split("@").pop().toLowerCase().split(".");
    return config.email.specialUse.indexOf(labels[labels.length - 1]) < 0;
  }

  function controlOf(fieldEl) {
    return document.getElementById("f-" + fieldEl.getAttribute("data-field"));
  }

  /* The message to show under the field, or "" when its answer is fine. */
  function check(fieldEl) {
    var type = fieldEl.getAttribute("data-type");
    var control = controlOf(fieldEl);
    var required = control.hasAttribute("required");
    if (type === "checkbox") return required && !control.checked ? messages.checkboxRequired : "";
    var answer = control.value.trim();
    if (!answer) return required ? messages.required : "";
    if (type === "email" && !emailOk(answer)) return messages.email;
    if (type === "phone_number") {
      var phone = phoneE164(fieldEl, answer);
      if (phone.error) return phone.error;
      if (phone.e164 === null) return ""; // rules need the E.164 form: the server checks
      answer = phone.e164;
    }
    if (type === "select") {
      var values = Array.prototype.map.call(control.options, function (o) { return o.value; });
      if (values.indexOf(answer) < 0) return messages.select;
    }
    if (type === "address" && config.address.check === "structural") {
      var missing = addressMissing(answer);
      if (missing.length) return missingMessage(missing);
    }
    var rules = JSON.parse(control.getAttribute("data-rules") || "[]");
    for (var i = 0; i < rules.length; i++) {
      var re;
      // The u flag: the dialect the service checked the pattern in and matches with RE2.
      // A pattern stored before that dialect may not compile: the service skips it too.
      try { re = new RegExp(rules[i].pattern, "u"); } catch (e) { continue; }
      if (!re.test(answer)) return rules[i].title;
    }
    return "";
  }

  function show(fieldEl, message) {
    var control = controlOf(fieldEl);
    var slot = document.getElementById("f-" + fieldEl.getAttribute("data-field") + "-error");
    if (message) {
      slot.textContent = message;
      slot.hidden = false;
      control.setAttribute("aria-invalid", "true");
    } else {
      slot.textContent = "";
      slot.hidden = true;
      control.removeAttribute("aria-invalid");
    }
  }

  var fields = Array.prototype.slice.call(form.querySelectorAll("[data-field]"));
  var summary = form.querySelector("[data-summary]");

  function showSummary(failures) {
    summary.textContent = "";
    if (!failures.length) { summary.hidden = true; return; }
    var heading = document.createElement("h2");
    heading.textContent = failures.length === 1 ? "Please fix 1 answer"
      : "Please fix " + failures.length + " answers";
    var list = document.createElement("ul");
    failures.forEach(function (f) {
      var item = document.createElement("li");
      var link = document.createElement("a");
      link.href = "#f-" + f.field.getAttribute("data-field");
      var label = f.field.querySelector(".label");
      link.textContent = (label ? label.firstChild.textContent : "") + ": " + f.message;
      link.addEventListener("click", function (ev) {
        ev.preventDefault();
        controlOf(f.field).focus();
      });
      item.appendChild(link);
      list.appendChild(item);
    });
    summary.appendChild(heading);
    summary.appendChild(list);
    summary.hidden = false;
  }

  fields.forEach(function (fieldEl) {
    var control = controlOf(fieldEl);
    var revalidate = function () {
      if (control.getAttribute("aria-invalid") === "true") show(fieldEl, check(fieldEl));
    };
    control.addEventListener("input", revalidate);
    control.addEventListener("change", function () { show(fieldEl, check(fieldEl)); });
    control.addEventListener("blur", function () {
      if (control.value && control.type !== "checkbox") show(fieldEl, check(fieldEl));
    });
    fieldEl.addEventListener("hw-country-change", function () {
      if (control.value) show(fieldEl, check(fieldEl));
    });
  });

  // -- a provider's corrected address, offered beside what was typed ---------------
  // Ticking "Use this address" puts the suggestion in the box (what is sent is what is
  // shown); unticking brings back what was typed; editing the box unticks it. Without
  // this script the ticked box still sends the suggestion (the server takes it).
  Array.prototype.forEach.call(form.querySelectorAll("[data-use-suggestion]"), function (box) {
    var control = document.getElementById(box.getAttribute("data-use-suggestion"));
    var fieldEl = control.closest("[data-field]");
    var typed = control.value;
    box.addEventListener("change", function () {
      if (box.checked) {
        typed = control.value;
        control.value = box.value;
      } else {
        control.value = typed;
      }
      show(fieldEl, "");
    });
    control.addEventListener("input", function () {
      if (box.checked && control.value !== box.value) box.checked = false;
    });
  });

  var submitting = false;
  var expired = false;
  var button = form.querySelector("button[type=submit]");

  form.addEventListener("submit", function (ev) {
    if (expired || submitting) { ev.preventDefault(); return; }
    var failures = [];
    fields.forEach(function (fieldEl) {
      var message = check(fieldEl);
      show(fieldEl, message);
      if (message) failures.push({ field: fieldEl, message: message });
    });
    showSummary(failures);
    if (failures.length) {
      ev.preventDefault();
      controlOf(failures[0].field).focus();
      return;
    }
    submitting = true; // one post per page; the server refuses a second anyway
    button.setAttribute("aria-disabled", "true");
    button.classList.add("sending");
  });

  // -- countdown ----------------------------------------------------------------

  var countdown = document.querySelector("[data-countdown]");
  var announce = document.querySelector("[data-countdown-announce]");

  function duration(ms) {
    var total = Math.max(0, Math.ceil(ms / 1000));
    var h = Math.floor(total / 3600), m = Math.floor((total % 3600) / 60), s = total % 60;
    var ss = (s < 10 ? "0" : "") + s;
    if (h) return h + ":" + (m < 10 ? "0" : "") + m + ":" + ss;
    return m + ":" + ss;
  }

  if (countdown) {
    var skew = Number(countdown.getAttribute("data-now")) - Date.now();
    var waitAttr = countdown.getAttribute("data-wait");
    var waitEnd = waitAttr ? Number(waitAttr) : null;
    var followUpEnd = Number(countdown.getAttribute("data-follow-up"));
    var text = countdown.querySelector(".countdown-text");
    var phase = "";
    var timer = null;

    var enter = function (next, message) {
      if (phase && phase !== next && message) announce.textContent = message;
      phase = next;
    };

    var tick = function () {
      var now = Date.now() + skew;
      if (waitEnd !== null && now < waitEnd) {
        enter("wait", "");
        text.textContent = "Time left to answer: " + duration(waitEnd - now);
      } else if (waitEnd === null && now < followUpEnd) {
        enter("wait", "");
        text.textContent = "Time left to answer: " + duration(followUpEnd - now);
      } else if (now < followUpEnd) {
        enter("late", "The requested answer time has passed. You can still send this form.");
        countdown.classList.add("late");
        text.textContent = "You can still send this form for " + duration(followUpEnd - now);
      } else {
        enter("over", "This form has expired.");
        expired = true;
        countdown.classList.remove("late");
        countdown.classList.add("over");
        text.textContent = "This form has expired";
        form.hidden = true;
        document.querySelector("[data-expired-note]").hidden = false;
        if (timer !== null) clearInterval(timer);
      }
    };
    tick();
    if (!expired) timer = setInterval(tick, 1000);
  }

  // -- the searchable country picker ------------------------------------------

  function enhancePhone(fieldEl) {
    var box = fieldEl.querySelector("[data-phone]");
    var select = box.querySelector("select.country");
    var countries = Array.prototype.map.call(select.options, function (o) {
      return {
        region: o.value,
        code: o.getAttribute("data-code"),
        name: o.textContent.replace(/ \(\+\d+\)$/, ""),
      };
    });
    var listId = select.id + "-list";
    var wrap = document.createElement("div");
    wrap.className = "picker";
    var input = document.createElement("input");
    input.type = "text";
    input.id = select.id + "-search";
    input.setAttribute("role", "combobox");
    input.setAttribute("aria-autocomplete", "list");
    input.setAttribute("aria-expanded", "false");
    input.setAttribute("aria-controls", listId);
    input.setAttribute("aria-label", select.getAttribute("aria-label") +
      " (type a country name, code or +number)");
    input.setAttribute("autocomplete", "off");
    input.setAttribute("spellcheck", "false");
    var list = document.createElement("ul");
    list.id = listId;
    list.setAttribute("role", "listbox");
    list.setAttribute("aria-label", "Countries");
    list.hidden = true;
    wrap.appendChild(input);
    wrap.appendChild(list);
    box.insertBefore(wrap, select);
    // The native select stays in the form (it carries the value) but out of reach.
    select.hidden = true;
    select.tabIndex = -1;
    select.setAttribute("aria-hidden", "true");

    var shown = [];
    var active = -1;

    function current() {
      for (var i = 0; i < countries.length; i++) {
        if (countries[i].region === select.value) return countries[i];
      }
      return null;
    }

    function display() {
      var c = current();
      input.value = c ? c.region + " +" + c.code : "";
      input.title = c ? c.name + " (+" + c.code + ")" : "";
    }

    function matches(query) {
      var q = query.trim().toLowerCase();
      if (!q) return countries.slice();
      var digits = q.replace(/^\+/, "");
      var numeric = /^\d+$/.test(digits);
      var scored = [];
      countries.forEach(function (c) {
        var name = c.name.toLowerCase();
        var score = -1;
        if (numeric) {
          if (c.code === digits) score = 0;
          else if (c.code.indexOf(digits) === 0) score = 1;
        } else if (c.region.toLowerCase() === q) score = 0;
        else if (name.indexOf(q) === 0) score = 1;
        else if (name.indexOf(" " + q) >= 0) score = 2;
        else if (name.indexOf(q) >= 0) score = 3;
        if (score >= 0) scored.push({ c: c, score: score });
      });
      scored.sort(function (a, b) { return a.score - b.score; });
      return scored.map(function (s) { return s.c; });
    }

    function setActive(index) {
      var items = list.children;
      if (active >= 0 && items[active]) items[active].setAttribute("aria-selected", "false");
      active = index;
      if (active >= 0 && items[active] && shown.length) {
        items[active].setAttribute("aria-selected", "true");
        input.setAttribute("aria-activedescendant", items[active].id);
        items[active].scrollIntoView({ block: "nearest" });
      } else {
        input.removeAttribute("aria-activedescendant");
      }
    }

    function open(query) {
      shown = matches(query);
      list.textContent = "";
      if (!shown.length) {
        var none = document.createElement("li");
        none.className = "empty";
        none.textContent = "No country matches";
        list.appendChild(none);
      }
      shown.forEach(function (c) {
        var item = document.createElement("li");
        item.id = listId + "-" + c.region;
        item.setAttribute("role", "option");
        item.setAttribute("aria-selected", "false");
        item.setAttribute("data-region", c.region);
        var name = document.createElement("span");
        name.textContent = c.name;
        var code = document.createElement("span");
        code.className = "code";
        code.textContent = "+" + c.code;
        item.appendChild(name);
        item.appendChild(code);
        list.appendChild(item);
      });
      list.hidden = false;
      input.setAttribute("aria-expanded", "true");
      var selectedIndex = -1;
      for (var i = 0; i < shown.length; i++) {
        if (shown[i].region === select.value) selectedIndex = i;
      }
      active = -1;
      setActive(query.trim() ? (shown.length ? 0 : -1) : selectedIndex);
    }

    function close() {
      list.hidden = true;
      input.setAttribute("aria-expanded", "false");
      input.removeAttribute("aria-activedescendant");
      active = -1;
    }

    function choose(region) {
      select.value = region;
      close();
      display();
      fieldEl.dispatchEvent(new CustomEvent("hw-country-change"));
    }

    input.addEventListener("focus", function () { input.select(); });
    input.addEventListener("click", function () { if (list.hidden) open(""); });
    input.addEventListener("input", function () { open(input.value); });
    input.addEventListener("blur", function () { close(); display(); });
    input.addEventListener("keydown", function (ev) {
      var openNow = !list.hidden;
      if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
        ev.preventDefault();
        if (!openNow) { open(""); return; }
        if (!shown.length) return;
        var step = ev.key === "ArrowDown" ? 1 : -1;
        setActive(Math.min(shown.length - 1, Math.max(0, active + step)));
      } else if (ev.key === "Enter") {
        if (openNow) {
          ev.preventDefault(); // choosing a country must not submit the form
          if (active >= 0 && shown[active]) choose(shown[active].region);
        }
      } else if (ev.key === "Escape") {
        if (openNow) { ev.preventDefault(); close(); display(); input.select(); }
      } else if (ev.key === "Home" && openNow && shown.length) {
        ev.preventDefault(); setActive(0);
      } else if (ev.key === "End" && openNow && shown.length) {
        ev.preventDefault(); setActive(shown.length - 1);
      }
    });
    list.addEventListener("mousedown", function (ev) { ev.preventDefault(); });
    list.addEventListener("click", function (ev) {
      var item = ev.target.closest("li[data-region]");
      if (item) { choose(item.getAttribute("data-region")); input.focus(); }
    });
    display();
  }

  fields.forEach(function (fieldEl) {
    if (fieldEl.getAttribute("data-type") === "phone_number") enhancePhone(fieldEl);
  });
  loadCountries();

  // A re-rendered page with server-side errors: take the person to the summary.
  if (summary && !summary.hidden) summary.focus();
})();
