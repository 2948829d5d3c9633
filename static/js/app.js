/*
 * Superstep dashboard behaviour: plain ES2020, no modules, no dependencies beyond htmx.
 *
 * Everything here must run under a strict Content-Security-Policy (script-src 'self' + nonce,
 * no 'unsafe-eval', no inline styles), so: no eval or Function(), no inline event handlers,
 * no style="" strings, and data from the server goes into the page through textContent and
 * createElement only. HTML comes only from Django's auto-escaping templates, through htmx (its
 * responses, and the websocket messages its ws extension swaps; see live.js).
 *
 * Hooks (all opt-in through data attributes, and re-scanned whenever htmx loads new content):
 *   meta[name=csrf-token]            CSRF header on every htmx request
 *   form[data-confirm="#dialog-id"]  submit only after the <dialog> is confirmed
 *   time[data-relative]              "3 min ago", refreshed every 30 s
 *   [data-duration-since]            live "4 min 12 s" ([data-duration-until] freezes it)
 *   [data-json-tree="script-id"]     collapsible tree from a json_script block
 *   [data-json-expand|collapse=id]   expand-all / collapse-all for that tree
 *   textarea[data-json-validate]     JSON syntax check as you type
 *   button[data-json-format=id]      pretty-print that textarea
 *   [data-dismiss]                   close the enclosing toast (others leave by themselves)
 *   a[href="#id"]                    also opens the closed <details> in that section
 *   button[data-nav-toggle]          opens and folds the main navigation on a phone
 *   details[data-open-wide]          open on wide screens, folded on phones
 */
(function () {
  "use strict";

  var htmx = window.htmx;

  // ---------------------------------------------------------------------------------------------
  // htmx configuration
  // ---------------------------------------------------------------------------------------------
  // This file is deferred right after htmx, so it runs before htmx initialises the document on
  // DOMContentLoaded; settings that matter at start-up (indicator styles) take effect.
  if (htmx) {
    // hx-on and "js:" values need eval; the CSP forbids it, and nothing of ours uses them.
    htmx.config.allowEval = false;
    // Never let an attribute (or injected markup) send a request, and the CSRF token, elsewhere.
    htmx.config.selfRequestsOnly = true;
    // htmx would inject an inline <style>, which style-src 'self' blocks; app.css has the rules.
    htmx.config.includeIndicatorStyles = false;
    // Settling copies these attributes from the element a swap replaces to the one that
    // replaces it; a style attribute some browser code left there would be written back, and
    // style-src 'self' refuses it (an inline style error on a page that has none of its own).
    htmx.config.attributesToSettle = ["class", "width", "height"];
    // Live pages go stale within seconds, so a snapshot restored on "back" would show old
    // statuses; reload from the server instead, which also keeps run data out of sessionStorage.
    htmx.config.historyCacheSize = 0;
    htmx.config.refreshOnHistoryMiss = true;
    // Views answer 422 with the form re-rendered with its errors, and 409 with "already decided
    // by …" for a stale action; both are content for the operator, so swap them like a 200.
    htmx.config.responseHandling = [
      { code: "204", swap: false },
      { code: "422", swap: true, error: false },
      { code: "409", swap: true, error: false },
      { code: "[23]..", swap: true },
      { code: "[45]..", swap: false, error: true },
    ];
    // allowScriptTags stays on: with it off htmx strips every <script> from swapped HTML,
    // json_script data blocks included. An executable one could only come from our own
    // templates, and it would carry no nonce, so the CSP would block it anyway.
  }

  function csrfToken() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  // The token comes from the page's <meta>, not from hx-headers: template data never goes into
  // hx-* attributes, and this listener covers every request, however it was triggered.
  document.addEventListener("htmx:configRequest", function (event) {
    var token = csrfToken();
    if (token) event.detail.headers["X-CSRFToken"] = token;
  });

  // Tell the operator when a request failed instead of leaving the button looking dead.
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    var status = xhr ? xhr.status : 0;
    var text = status === 403 ? "Not allowed, or your session expired. Reload the page and sign in again."
      : status === 404 ? "That item no longer exists."
      : "The server could not complete the request (" + status + ").";
    toast(text, "error");
  });
  document.addEventListener("htmx:sendError", function () {
    toast("Could not reach the server. Check your connection and try again.", "error");
  });

  // ---------------------------------------------------------------------------------------------
  // Toasts
  // ---------------------------------------------------------------------------------------------
  // Every toast, however it arrived (the page's flash messages, toast() below, or an htmx answer
  // swapped into #toasts), leaves by itself after a few seconds, so none sits on the cards for
  // good; not while the pointer or the focus is on it. Errors stay until dismissed: an operator
  // who looked away must still see them.
  var TOAST_LIFETIME_MS = 6000;
  var toastTimers = new WeakMap();

  function toast(text, level) {
    var region = document.getElementById("toasts");
    if (!region) return;
    var box = el("div", "toast toast-" + (level || "info"));
    if (level === "error") box.setAttribute("role", "alert");
    box.appendChild(el("p", "toast-text", text));
    var close = el("button", "toast-close", "×");
    close.type = "button";
    close.setAttribute("data-dismiss", "");
    close.setAttribute("aria-label", "Dismiss");
    box.appendChild(close);
    region.appendChild(box);
  }

  function scheduleToast(box) {
    if (!box.classList || !box.classList.contains("toast") || box.classList.contains("toast-error")) return;
    clearTimeout(toastTimers.get(box));
    toastTimers.set(box, setTimeout(function () { box.remove(); }, TOAST_LIFETIME_MS));
  }

  function holdToast(event) {
    var box = event.target.closest && event.target.closest(".toast");
    if (box) clearTimeout(toastTimers.get(box));
  }

  function releaseToast(event) {
    var box = event.target.closest && event.target.closest(".toast");
    if (box && !box.contains(event.relatedTarget)) scheduleToast(box);
  }

  function watchToasts() {
    var region = document.getElementById("toasts");
    if (!region || region.hasAttribute("data-watched")) return;
    region.setAttribute("data-watched", "");
    Array.prototype.forEach.call(region.children, scheduleToast);
    new MutationObserver(function (changes) {
      changes.forEach(function (change) { Array.prototype.forEach.call(change.addedNodes, scheduleToast); });
    }).observe(region, { childList: true });
    region.addEventListener("mouseover", holdToast);
    region.addEventListener("focusin", holdToast);
    region.addEventListener("mouseout", releaseToast);
    region.addEventListener("focusout", releaseToast);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watchToasts);
  else watchToasts();

  document.addEventListener("click", function (event) {
    var dismiss = event.target.closest("[data-dismiss]");
    if (dismiss) {
      var box = dismiss.closest(".toast, .alert");
      if (box) box.remove();
    }
  });

  // ---------------------------------------------------------------------------------------------
  // In-page links to a folded section
  // ---------------------------------------------------------------------------------------------
  // A link such as "Fork…" (href="#fork") means "show me that": scrolling to a section whose
  // content is folded in a closed <details> would show only its summary.
  function unfold(hash) {
    if (!hash || hash.length < 2) return;
    var section = null;
    try { section = document.getElementById(decodeURIComponent(hash.slice(1))); } catch (error) { return; }
    if (!section || section.tagName === "MAIN") return; // "Skip to content" only moves focus
    // Only a section folded as a whole: one <details>, not, say, a list of collapsed items.
    var inside = section.querySelectorAll("details");
    var folded = section instanceof HTMLDetailsElement ? section : inside.length === 1 ? inside[0] : null;
    if (!folded || folded.open) return;
    folded.open = true;
    var summary = folded.querySelector("summary");
    if (summary) summary.focus({ preventScroll: true });
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest('a[href^="#"]');
    if (link) unfold(link.getAttribute("href"));
  });
  window.addEventListener("hashchange", function () { unfold(window.location.hash); });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", function () { unfold(window.location.hash); });
  else unfold(window.location.hash);

  // The account menu is a <details>; close it on an outside click or Escape like a real menu.
  document.addEventListener("click", function (event) {
    document.querySelectorAll("details.user-menu[open]").forEach(function (menu) {
      if (!menu.contains(event.target)) menu.open = false;
    });
  });
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    document.querySelectorAll("details.user-menu[open]").forEach(function (menu) {
      menu.open = false;
      var summary = menu.querySelector("summary");
      if (summary) summary.focus();
    });
  });

  // The main navigation on a phone: a Menu button folds the links away (app.css shows them
  // again on wide screens, and hides the button there). Shown only once this script runs, so
  // that without it the links stay reachable in their scrolling row.
  document.querySelectorAll("[data-nav-toggle]").forEach(function (button) {
    var links = document.getElementById(button.getAttribute("aria-controls"));
    if (!links) return;
    function setOpen(open) { button.setAttribute("aria-expanded", open ? "true" : "false"); }
    button.hidden = false;
    button.addEventListener("click", function () {
      setOpen(button.getAttribute("aria-expanded") !== "true");
    });
    document.addEventListener("click", function (event) {
      if (!button.contains(event.target) && !links.contains(event.target)) setOpen(false);
    });
    document.addEventListener("keydown", function (event) {
      if (event.key !== "Escape" || button.getAttribute("aria-expanded") !== "true") return;
      setOpen(false);
      button.focus();
    });
  });

  // details[data-open-wide]: folded on a phone (a page of filters before the first row), open
  // on a wide screen; a window that crosses the width (a turned tablet) folds or opens them.
  // Folding hides, never resets, the fields inside, so their values go with the next submit.
  var wide = window.matchMedia("(min-width: 720px)");
  function foldNarrow() {
    document.querySelectorAll("details[data-open-wide]").forEach(function (fold) { fold.open = wide.matches; });
  }
  if (wide.matches) foldNarrow();
  wide.addEventListener("change", foldNarrow);

  // ---------------------------------------------------------------------------------------------
  // Confirmation dialogs
  // ---------------------------------------------------------------------------------------------
  // Forms already confirmed once, so their re-submission passes straight through.
  var confirmedForms = new WeakSet();

  // Capture phase on the document: we see the submit before htmx's listener on the form, and
  // stopping it here keeps htmx from sending anything until the operator has confirmed.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-confirm")) return;
    if (confirmedForms.has(form)) return;
    event.preventDefault();
    event.stopPropagation();
    var dialog = byIdSelector(form.getAttribute("data-confirm"));
    if (!(dialog instanceof HTMLDialogElement)) {
      // A missing dialog is a template bug; refusing is safer than acting unconfirmed.
      toast("This action needs a confirmation that could not be shown. Reload the page.", "error");
      return;
    }
    openConfirm(dialog, form, event.submitter || null);
  }, true);

  function openConfirm(dialog, form, submitter) {
    var inner = dialog.querySelector('form[method="dialog"]');
    dialog.returnValue = "";

    function validate(event) {
      // Fields typed in the dialog (a reason) belong to the action form through form="…", so
      // the dialog's own form would not check them; do it here while they are still visible.
      // A reason marked data-required (not "required": the browser would check that when the
      // form is first submitted, with the dialog still closed) must be filled in.
      if (!event.submitter || event.submitter.value !== "confirm") return;
      var fields = dialog.querySelectorAll("input, textarea, select");
      for (var i = 0; i < fields.length; i++) {
        var field = fields[i];
        if (field.form !== form) continue;
        var missing = field.hasAttribute("data-required") && field.value.trim() === "";
        showRequired(field, missing);
        if (missing) {
          // Said under the field, in the page's words, not in the browser's passing bubble.
          event.preventDefault();
          field.focus();
          return;
        }
        if (!field.checkValidity()) {
          event.preventDefault();
          field.reportValidity();
          return;
        }
      }
    }

    function onClose() {
      dialog.removeEventListener("close", onClose);
      if (inner) inner.removeEventListener("submit", validate);
      if (dialog.returnValue !== "confirm") return;
      // requestSubmit keeps the clicked button's name/value and fires submit again, so htmx
      // (for hx-post forms) or the browser (plain forms) handles it as usual. It dispatches
      // synchronously, so the pass is good for this one submission only, even when the
      // browser's own validation stops it.
      confirmedForms.add(form);
      try {
        if (submitter && submitter.form === form) form.requestSubmit(submitter);
        else form.requestSubmit();
      } finally {
        confirmedForms.delete(form);
      }
    }

    if (inner) inner.addEventListener("submit", validate);
    dialog.addEventListener("close", onClose);
    dialog.showModal();
  }

  // A required reason left empty: its message (data-required-message) shows until it is filled.
  function showRequired(field, missing) {
    var message = field.parentElement && field.parentElement.querySelector("[data-required-message]");
    field.setAttribute("aria-invalid", missing ? "true" : "false");
    var holder = field.closest(".field");
    if (holder) holder.classList.toggle("has-error", missing);
    if (message) message.hidden = !missing;
  }
  document.addEventListener("input", function (event) {
    var field = event.target;
    if (field instanceof HTMLTextAreaElement && field.hasAttribute("data-required")) {
      if (field.value.trim() !== "") showRequired(field, false);
    }
  });
  // Other forms (a page's own, the fork's confirmation) check their required reasons as they
  // are sent; a button marked formnovalidate (the fork's "Review") sends without them.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || form.hasAttribute("data-confirm")) return;
    if (event.submitter && event.submitter.hasAttribute("formnovalidate")) return;
    for (var i = 0; i < form.elements.length; i++) {
      var field = form.elements[i];
      if (!(field instanceof HTMLTextAreaElement) || !field.hasAttribute("data-required")) continue;
      var missing = field.value.trim() === "";
      showRequired(field, missing);
      if (missing) {
        event.preventDefault();
        event.stopImmediatePropagation();
        field.focus();
        return;
      }
    }
  }, true);

  function byIdSelector(selector) {
    if (typeof selector !== "string" || selector.charAt(0) !== "#") return null;
    return document.getElementById(selector.slice(1));
  }

  // ---------------------------------------------------------------------------------------------
  // Relative times and live durations
  // ---------------------------------------------------------------------------------------------
  // Django's "c" format has microseconds; not every engine parses more than milliseconds.
  function parseTime(text) {
    if (!text) return null;
    var ms = Date.parse(text.replace(/(\.\d{3})\d+/, "$1"));
    return isNaN(ms) ? null : ms;
  }

  function relativeText(ms, now) {
    var seconds = Math.round((now - ms) / 1000);
    var future = seconds < 0;
    var s = Math.abs(seconds);
    var text;
    if (s < 5) return "just now";
    if (s < 60) text = s + " s";
    else if (s < 3600) text = Math.floor(s / 60) + " min";
    else if (s < 86400) text = Math.floor(s / 3600) + " h";
    else text = Math.floor(s / 86400) + " d";
    return future ? "in " + text : text + " ago";
  }

  function durationText(totalMs) {
    var s = Math.max(0, Math.floor(totalMs / 1000));
    var d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600);
    var m = Math.floor((s % 3600) / 60), sec = s % 60;
    if (d) return d + " d " + h + " h";
    if (h) return h + " h " + pad(m) + " min";
    if (m) return m + " min " + pad(sec) + " s";
    return sec + " s";
  }

  function pad(n) { return n < 10 ? "0" + n : String(n); }

  var absoluteFormat = new Intl.DateTimeFormat(undefined, {
    year: "numeric", month: "short", day: "numeric",
    hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short",
  });

  function refreshRelative(root) {
    var now = Date.now();
    matchAll(root, "time[data-relative]").forEach(function (node) {
      var ms = parseTime(node.getAttribute("datetime"));
      if (ms === null) return;
      node.textContent = relativeText(ms, now);
      node.title = absoluteFormat.format(new Date(ms));
    });
  }

  function refreshDurations(root) {
    var now = Date.now();
    matchAll(root, "[data-duration-since]").forEach(function (node) {
      var since = parseTime(node.getAttribute("data-duration-since"));
      if (since === null) return;
      var until = parseTime(node.getAttribute("data-duration-until"));
      node.textContent = durationText((until === null ? now : until) - since);
    });
  }

  var tick = 0;
  setInterval(function () {
    // A hidden tab needs no ticking; "visibilitychange" below catches up when it returns.
    if (document.hidden) return;
    tick += 1;
    refreshDurations(document);
    if (tick % 30 === 0) refreshRelative(document);
  }, 1000);
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) { refreshRelative(document); refreshDurations(document); }
  });

  // ---------------------------------------------------------------------------------------------
  // JSON trees
  // ---------------------------------------------------------------------------------------------
  var JSON_STRING_PREVIEW = 400;   // longer strings get a "show all" toggle
  var JSON_EXPAND_LIMIT = 5000;    // nodes opened by "Expand all", so a huge state cannot hang the tab
  var IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
  var fillers = new WeakMap();   // <details> -> builds its children once, on first open
  var renderedTrees = new WeakSet();

  // Same notation as dashboard/web/jsondiff.py, so a copied path finds its row in a diff.
  function childPath(parent, key, isIndex) {
    if (isIndex) return parent + "[" + key + "]";
    return IDENTIFIER.test(key) ? parent + "." + key : parent + "[" + JSON.stringify(key) + "]";
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function keyButton(label, path) {
    var button = el("button", "json-key", label);
    button.type = "button";
    button.setAttribute("data-json-path", path);
    button.title = "Copy path " + path;
    return button;
  }

  function typeOf(value) {
    if (value === null) return "null";
    if (Array.isArray(value)) return "array";
    return typeof value;
  }

  function scalarNode(value) {
    var type = typeOf(value);
    if (type !== "string") return el("span", "json-value json-" + type, String(value));
    var text = JSON.stringify(value);
    var span = el("span", "json-value json-string");
    if (text.length <= JSON_STRING_PREVIEW) {
      span.textContent = text;
      return span;
    }
    span.textContent = text.slice(0, JSON_STRING_PREVIEW) + "…";
    var more = el("button", "json-more", "show all " + value.length + " chars");
    more.type = "button";
    more.addEventListener("click", function () {
      span.textContent = text;
      more.remove();
    });
    var wrap = el("span");
    wrap.append(span, " ", more);
    return wrap;
  }

  // dashboard/web/diff_values.py's tree() names a model's class in a "$model" entry, and
  // doubles the "$" of a data key that starts with one, so data cannot pass for the marker.
  // The class is shown as a badge beside the value and the doubled "$" is undone: no codec
  // marker is ever shown to the operator as if it were a key.
  var MODEL = "$model";

  function modelName(value) {
    if (typeOf(value) !== "object" || typeof value[MODEL] !== "string") return null;
    return value[MODEL];
  }

  function entries(value) {
    if (Array.isArray(value)) return value.map(function (item, i) { return [String(i), item, i]; });
    return Object.keys(value).filter(function (key) { return key !== MODEL; }).map(function (key) {
      var shown = key.charAt(0) === "$" && key.charAt(1) === "$" ? key.slice(1) : key;
      return [shown, value[key], shown];
    });
  }

  function typeBadge(name) {
    var badge = el("span", "badge json-type", name.split(".").pop());
    badge.title = name;
    return badge;
  }

  function summaryText(value) {
    return Array.isArray(value) ? "[" + value.length + "]" : "{" + entries(value).length + "}";
  }

  function buildNode(label, value, path, depth, openDepth) {
    var type = typeOf(value);
    var isContainer = type === "object" || type === "array";
    var model = modelName(value);
    var empty = isContainer && entries(value).length === 0;
    if (!isContainer || empty) {
      var leaf = el("div", "json-leaf");
      leaf.setAttribute("data-path", path);
      leaf.append(keyButton(label, path), el("span", "json-colon", ": "));
      if (model !== null) leaf.append(typeBadge(model), " ");
      leaf.append(empty ? el("span", "json-value json-empty", type === "array" ? "[]" : "{}") : scalarNode(value));
      return leaf;
    }
    var details = el("details", "json-node");
    details.setAttribute("data-path", path);
    var summary = el("summary");
    summary.append(keyButton(label, path));
    if (model !== null) summary.append(" ", typeBadge(model));
    summary.append(el("span", "json-meta", " " + summaryText(value)));
    details.appendChild(summary);
    // Children are built on first open: a checkpoint can hold thousands of items, and most
    // operators look at a handful of them.
    var filled = false;
    var fill = function () {
      if (filled) return;
      filled = true;
      var children = el("div", "json-children");
      var isArray = Array.isArray(value);
      entries(value).forEach(function (entry) {
        children.appendChild(buildNode(entry[0], entry[1], childPath(path, entry[2], isArray), depth + 1, openDepth));
      });
      details.appendChild(children);
    };
    fillers.set(details, fill);
    details.addEventListener("toggle", function () { if (details.open) fill(); });
    if (depth < openDepth) {
      fill();
      details.open = true;
    }
    return details;
  }

  function renderJsonTree(container) {
    if (renderedTrees.has(container)) return;
    renderedTrees.add(container);
    var source = document.getElementById(container.getAttribute("data-json-tree"));
    container.replaceChildren();
    if (!source) {
      container.appendChild(el("p", "muted", "No data."));
      return;
    }
    var value;
    try {
      value = JSON.parse(source.textContent);
    } catch (error) {
      container.appendChild(el("p", "field-error-text", "This value is not valid JSON and cannot be shown as a tree."));
      return;
    }
    var depth = parseInt(container.getAttribute("data-expand-depth") || "1", 10);
    container.appendChild(buildNode("$", value, "$", 0, isNaN(depth) ? 1 : depth));
  }

  function setTreeOpen(id, open) {
    var container = document.querySelector('[data-json-tree="' + cssEscape(id) + '"]');
    if (!container) return;
    if (!open) {
      container.querySelectorAll("details.json-node").forEach(function (d) { d.open = false; });
      var root = container.querySelector("details.json-node");
      if (root) root.open = true;
      return;
    }
    // Breadth-first, filling as we go, with a cap: "Expand all" on 100k items must not freeze.
    var queue = Array.prototype.slice.call(container.querySelectorAll(":scope > details.json-node"));
    var opened = 0;
    while (queue.length && opened < JSON_EXPAND_LIMIT) {
      var node = queue.shift();
      var fill = fillers.get(node);
      if (fill) fill();
      node.open = true;
      opened += 1;
      var kids = node.querySelector(":scope > .json-children");
      if (kids) queue.push.apply(queue, kids.querySelectorAll(":scope > details.json-node"));
    }
    if (queue.length) toast("Expanded the first " + JSON_EXPAND_LIMIT + " nodes; open the rest by hand.", "info");
  }

  document.addEventListener("click", function (event) {
    var expand = event.target.closest("[data-json-expand]");
    if (expand) { setTreeOpen(expand.getAttribute("data-json-expand"), true); return; }
    var collapse = event.target.closest("[data-json-collapse]");
    if (collapse) { setTreeOpen(collapse.getAttribute("data-json-collapse"), false); return; }
    var key = event.target.closest(".json-key[data-json-path]");
    if (key) copyText(key.getAttribute("data-json-path"));
  });

  function copyText(text) {
    var done = function () { toast("Copied " + text, "success"); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { legacyCopy(text, done); });
    } else {
      legacyCopy(text, done);
    }
  }

  // Plain-http deployments have no Clipboard API; a selected off-screen field still copies.
  function legacyCopy(text, done) {
    var field = el("textarea", "visually-hidden");
    field.value = text;
    field.setAttribute("readonly", "");
    document.body.appendChild(field);
    field.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (error) { ok = false; }
    field.remove();
    if (ok) done(); else toast("Path: " + text, "info");
  }

  function cssEscape(value) {
    return window.CSS && CSS.escape ? CSS.escape(value) : String(value).replace(/["\\]/g, "\\$&");
  }

  // ---------------------------------------------------------------------------------------------
  // Raw JSON fields
  // ---------------------------------------------------------------------------------------------
  // The server validates through the codec anyway; this only saves a round trip for typos. The
  // message goes next to the field and into setCustomValidity, so the form will not submit.
  function validateJsonField(field) {
    var error = jsonErrorTarget(field);
    var message = "";
    if (field.value.trim() !== "") {
      try { JSON.parse(field.value); } catch (e) { message = describeJsonError(e, field.value); }
    }
    field.setCustomValidity(message);
    field.setAttribute("aria-invalid", message ? "true" : "false");
    error.textContent = message;
    error.hidden = !message;
  }

  function jsonErrorTarget(field) {
    var id = field.getAttribute("data-json-error") || (field.id ? field.id + "_jsonerror" : "");
    var target = id ? document.getElementById(id) : null;
    if (target) return target;
    target = el("p", "field-error-text");
    target.id = id || "jsonerror-" + Math.random().toString(36).slice(2);
    target.setAttribute("aria-live", "polite");
    target.hidden = true;
    field.insertAdjacentElement("afterend", target);
    var described = (field.getAttribute("aria-describedby") || "").split(" ").filter(Boolean);
    if (described.indexOf(target.id) < 0) described.push(target.id);
    field.setAttribute("aria-describedby", described.join(" "));
    return target;
  }

  function describeJsonError(error, text) {
    var message = String(error && error.message || "Invalid JSON");
    var match = /position (\d+)/.exec(message);
    if (match && !/line \d+/.test(message)) {
      var before = text.slice(0, parseInt(match[1], 10)).split("\n");
      message += " (line " + before.length + ", column " + (before[before.length - 1].length + 1) + ")";
    }
    return "Not valid JSON: " + message;
  }

  var jsonTimers = new WeakMap();
  document.addEventListener("input", function (event) {
    var field = event.target;
    if (!(field instanceof HTMLTextAreaElement) || !field.hasAttribute("data-json-validate")) return;
    clearTimeout(jsonTimers.get(field));
    jsonTimers.set(field, setTimeout(function () { validateJsonField(field); }, 250));
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-json-format]");
    if (!button) return;
    var field = document.getElementById(button.getAttribute("data-json-format"));
    if (!field) return;
    try {
      field.value = JSON.stringify(JSON.parse(field.value), null, 2);
    } catch (error) { /* leave the text alone; the validator already says what is wrong */ }
    validateJsonField(field);
  });

  // ---------------------------------------------------------------------------------------------
  // Initialisation of new content
  // ---------------------------------------------------------------------------------------------
  function init(root) {
    if (!root || !root.querySelectorAll) return;
    refreshRelative(root);
    refreshDurations(root);
    matchAll(root, "[data-json-tree]").forEach(renderJsonTree);
    matchAll(root, "textarea[data-json-validate]").forEach(function (field) {
      if (field.value.trim() !== "") validateJsonField(field);
    });
  }

  // querySelectorAll skips the root itself; a swapped element may be the hook.
  function matchAll(root, selector) {
    if (!root.querySelectorAll) return [];
    var found = Array.prototype.slice.call(root.querySelectorAll(selector));
    if (root.matches && root.matches(selector)) found.unshift(root);
    return found;
  }

  // htmx fires htmx:load for the body once it has processed the page, and again for every
  // piece of content it swaps in, including the websocket's out-of-band swaps.
  document.addEventListener("htmx:load", function (event) { init(event.target); });
  // Without htmx (blocked or failed to load) the page still gets its widgets.
  if (!htmx) {
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", function () { init(document.body); });
    } else {
      init(document.body);
    }
  }

  window.superstep = { toast: toast, copyText: copyText };
})();
