/*
 * The approval inbox's deciding (templates/dashboard/approval_inbox.html), under the same strict
 * CSP as app.js: no inline script, no eval, text into the page through textContent only.
 *
 *   Reject           asks for the reason (required) and a confirmation in #reject-dialog.
 *   Approve          one click; a confirmation (#approve-dialog, listing what changed) when the
 *                    answer's fields were edited, and always when it comes from the keyboard.
 *   j / k            select the next / previous request in the list; a / r approve / reject.
 *                    Not while typing in a field, nor with a dialog open.
 *   Out of band      a late status reload of the request shown before changes nothing in
 *                    the panel of another (data-request-id on each swapped part); one that
 *                    brings the decision bar unchanged leaves it as it is.
 *   Selection        the list highlights the request the panel shows, whatever swapped which
 *                    (a click, a decision that moved on, the list's live reload), and the
 *                    decision form says which request comes next (``next``), so the server can
 *                    move the panel there after a decision.
 *
 * The decision form is an hx-post form; its buttons live in the sticky #decision-bar, outside
 * it (form="decision-form"). htmx learns which button submitted from its click, so a confirmed
 * decision is sent by clicking the button again, with this script letting that one through.
 */
(function () {
  "use strict";

  var passing = false;  // a confirmed decision on its way through the submit listener below

  function decisionForm() { return document.getElementById("decision-form"); }

  function decisionButton(value) {
    return document.querySelector('#decision-bar button[data-decision="' + value + '"]');
  }

  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("#approval-list a.request-item"));
  }

  function shownRequest() {
    var panel = document.getElementById("approval-panel");
    return panel ? panel.getAttribute("data-request-id") || "" : "";
  }

  function rowRequest(row) {
    return new URL(row.href, window.location.href).searchParams.get("request") || "";
  }

  // ---------------------------------------------------------------------------------------------
  // The list shows the panel's request as selected
  // ---------------------------------------------------------------------------------------------
  function syncSelection() {
    var shown = shownRequest();
    var selectedIndex = -1;
    rows().forEach(function (row, index) {
      var selected = shown !== "" && rowRequest(row) === shown;
      row.classList.toggle("is-selected", selected);
      if (selected) { row.setAttribute("aria-current", "true"); selectedIndex = index; }
      else row.removeAttribute("aria-current");
    });
    // The live reload of the list asks for the request the panel shows, not the page's first.
    var query = document.getElementById("approvals-query");
    if (query && shown) {
      var input = query.querySelector('input[name="request"]');
      if (!input) {
        input = document.createElement("input");
        input.type = "hidden";
        input.name = "request";
        query.appendChild(input);
      }
      input.value = shown;
    }
    var next = document.querySelector("#decision-form [data-next-request]");
    if (next) {
      var all = rows();
      var following = all[selectedIndex + 1] || all[selectedIndex - 1];
      next.value = selectedIndex >= 0 && following ? rowRequest(following) : "";
    }
    if (shown && new URL(window.location.href).searchParams.get("request") !== shown) {
      var url = new URL(window.location.href);
      url.searchParams.set("request", shown);
      url.searchParams.delete("mode");
      window.history.replaceState(window.history.state, "", url.toString());
    }
  }

  // A status reload sent for the request shown before (its answer can land after a click or a
  // decision moved the panel on) brings that request's claim line and decision bar out of
  // band: they must not land in another request's panel.
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var incoming = event.detail.fragment && event.detail.fragment.firstElementChild;
    var target = event.detail.target;
    if (!incoming || !target || !target.hasAttribute("data-request-id")) return;
    if (incoming.getAttribute("data-request-id") !== target.getAttribute("data-request-id")) {
      event.detail.shouldSwap = false;
    } else if (target.id === "decision-bar" && incoming.innerHTML === target.innerHTML &&
               incoming.hidden === target.hidden) {
      // Every status reload brings the bar; one that says the same is not redrawn, so a click
      // on its buttons is never lost to a swap in the middle of it.
      event.detail.shouldSwap = false;
    }
  });

  document.addEventListener("htmx:afterSettle", syncSelection);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", syncSelection);
  else syncSelection();

  // ---------------------------------------------------------------------------------------------
  // Confirmations
  // ---------------------------------------------------------------------------------------------
  function describe(dialog) {
    var what = dialog.querySelector("[data-dialog-what]");
    var title = document.querySelector("#approval-panel .card-title");
    if (what) what.textContent = title ? title.textContent.trim() : "";
  }

  // Opens ``dialog``; ``check`` may refuse the confirm button (returns false); ``done`` runs once
  // it is confirmed.
  function ask(dialog, check, done) {
    var inner = dialog.querySelector('form[method="dialog"]');
    dialog.returnValue = "";
    function onSubmit(event) {
      if (event.submitter && event.submitter.value === "confirm" && !check()) event.preventDefault();
    }
    function onClose() {
      inner.removeEventListener("submit", onSubmit);
      dialog.removeEventListener("close", onClose);
      if (dialog.returnValue === "confirm") done();
    }
    inner.addEventListener("submit", onSubmit);
    dialog.addEventListener("close", onClose);
    describe(dialog);
    dialog.showModal();
  }

  // The bar's button of the same decision as it is now: a status reload may have redrawn the
  // bar while the dialog was open, and a click on the button it replaced would send nothing.
  function current(button) {
    return button.isConnected ? button : decisionButton(button.getAttribute("data-decision")) || button;
  }

  function send(button) {
    passing = true;
    try { button.click(); } finally { passing = false; }
  }

  function askReject(button) {
    var dialog = document.getElementById("reject-dialog");
    var form = decisionForm();
    if (!dialog || !form) return;
    // The reason is "required" in the dialog's own form, which the browser checks; spaces
    // alone are refused here.
    var reason = document.getElementById("reject-reason");
    var typed = form.querySelector('textarea[name="reason"]');
    reason.value = typed ? typed.value : "";
    ask(dialog, function () {
      if (reason.value.trim() !== "") return true;
      reason.value = "";
      reason.reportValidity();
      return false;
    }, function () {
      if (typed) typed.value = reason.value;
      send(current(button));
    });
    reason.focus();
  }

  // The answer's fields whose value differs from what the page was drawn with, as text.
  function edits(form) {
    var found = [];
    form.querySelectorAll(".response-fieldset input, .response-fieldset select, .response-fieldset textarea")
      .forEach(function (field) {
        var changed;
        if (field.type === "checkbox" || field.type === "radio") changed = field.checked !== field.defaultChecked;
        else if (field.tagName === "SELECT") {
          changed = Array.prototype.some.call(field.options, function (o) { return o.selected !== o.defaultSelected; });
        } else changed = field.value !== field.defaultValue;
        if (!changed || field.type === "hidden") return;
        var label = field.labels && field.labels[0] ? field.labels[0].textContent.replace("*", "").trim() : field.name;
        var value = field.type === "checkbox" ? (field.checked ? "yes" : "no") : field.value;
        found.push(label + ": " + (value === "" ? "(empty)" : value));
      });
    return found;
  }

  function askApprove(button, changes) {
    var dialog = document.getElementById("approve-dialog");
    if (!dialog) return;
    var note = dialog.querySelector("[data-edited-note]");
    var list = dialog.querySelector("[data-edited-list]");
    list.replaceChildren();
    changes.forEach(function (text) {
      var item = document.createElement("li");
      item.textContent = text;
      list.appendChild(item);
    });
    note.hidden = list.hidden = changes.length === 0;
    ask(dialog, function () { return true; }, function () { send(current(button)); });
  }

  // Capture phase: before htmx's own listener on the form sends anything.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (passing || !(form instanceof HTMLFormElement) || form.id !== "decision-form") return;
    var button = event.submitter;
    if (!button || !button.hasAttribute("data-decision")) return;
    syncSelection();
    var value = button.getAttribute("data-decision");
    var changes = value === "approve" ? edits(form) : [];
    if (value === "approve" && changes.length === 0) return;  // one deliberate click
    event.preventDefault();
    event.stopPropagation();
    if (value === "reject") askReject(button);
    else askApprove(button, changes);
  }, true);

  // ---------------------------------------------------------------------------------------------
  // Keys
  // ---------------------------------------------------------------------------------------------
  function typing(target) {
    return target instanceof HTMLElement && (
      target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }

  function move(step) {
    var all = rows();
    if (!all.length) return;
    var shown = shownRequest();
    var index = all.findIndex(function (row) { return rowRequest(row) === shown; });
    var target = all[index < 0 ? 0 : Math.min(all.length - 1, Math.max(0, index + step))];
    if (target && rowRequest(target) !== shown) {
      target.click();
      target.scrollIntoView({ block: "nearest" });
    }
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target) || document.querySelector("dialog[open]")) return;
    var button;
    if (event.key === "j" || event.key === "k") {
      event.preventDefault();
      move(event.key === "j" ? 1 : -1);
    } else if (event.key === "a" || event.key === "r") {
      button = decisionButton(event.key === "a" ? "approve" : "reject");
      if (!button || button.disabled) return;
      event.preventDefault();
      syncSelection();
      if (event.key === "r") askReject(button);
      else askApprove(button, edits(decisionForm()));
    }
  });
})();
