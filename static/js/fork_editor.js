/*
 * The fork editor on the checkpoint page (templates/components/fork_editor.html).
 *
 *   a[data-fork-open]           "Fork…": opens the editor where it is and brings it into view
 *                               (without JavaScript its link reloads the page with it open)
 *   #fork-editor swapped in     the check's answer (htmx): the confirmation it carries opens;
 *                               without one, the first field with an error comes into view
 *   form[data-fork-form]        reaches the fork view only from the confirmation's "Fork"
 *                               (Enter in a field reviews instead)
 *
 * The same rules as app.js: plain ES2020, no eval, no inline handlers, no HTML from strings.
 */
(function () {
  "use strict";

  function openEditor() {
    var details = document.getElementById("fork-details");
    if (!details) return false;
    details.open = true;
    (document.getElementById("fork") || details).scrollIntoView({ block: "start" });
    var first = details.querySelector("[data-fork-field]");
    if (first) first.focus({ preventScroll: true });
    return true;
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[data-fork-open]");
    if (!link || !openEditor()) return;
    event.preventDefault();
    history.replaceState(history.state, "", "#fork");
  });

  // htmx fires htmx:load on each element it swapped in: here, the editor it got back.
  document.addEventListener("htmx:load", function (event) {
    var editor = event.target;
    if (!editor || editor.id !== "fork-editor") return;
    var dialog = editor.querySelector("dialog[data-fork-confirm]");
    if (dialog instanceof HTMLDialogElement) {
      dialog.showModal();
      return;
    }
    var wrong = editor.querySelector('[aria-invalid="true"]');
    var shown = wrong || editor.querySelector(".field-errors, #fork-errors");
    if (shown) shown.scrollIntoView({ block: "center" });
    if (wrong) wrong.focus({ preventScroll: true });
  });

  // Capture phase: before htmx or the browser sends the form anywhere.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-fork-form")) return;
    var submitter = event.submitter;
    if (submitter && (submitter.hasAttribute("data-fork-confirm-button") || submitter.hasAttribute("data-fork-review"))) return;
    event.preventDefault();
    var review = form.querySelector("[data-fork-review]");
    if (review) review.click();
  }, true);
})();
