/*
 * Picking rows for an action on many (runs list, approval inbox): a header checkbox
 * ([data-pick-all="<form id>"]) ticks or clears every row checkbox of that form on the page
 * ([data-pick][form="<form id>"]), and the form's [data-pick-count] says how many are picked.
 * Rows redrawn by the live updates keep their ticks (hx-preserve); the count is taken again
 * after every swap. Without JavaScript each row's box still works; only the header box and the
 * count need this.
 */
(function () {
  "use strict";

  function picks(formId) {
    return Array.prototype.slice.call(
      document.querySelectorAll('input[data-pick][form="' + formId + '"]'));
  }

  function recount(formId) {
    var boxes = picks(formId);
    var ticked = boxes.filter(function (box) { return box.checked; }).length;
    var form = document.getElementById(formId);
    if (!form) return;
    var everything = form.querySelector('input[name="all_matching"]');
    var label = form.querySelector("[data-pick-count]");
    if (label) {
      label.textContent = everything && everything.checked
        ? label.getAttribute("data-all-text") || "every matching run"
        : ticked + (ticked === 1 ? " picked" : " picked");
    }
    document.querySelectorAll('input[data-pick-all="' + formId + '"]').forEach(function (all) {
      all.checked = boxes.length > 0 && ticked === boxes.length;
      all.indeterminate = ticked > 0 && ticked < boxes.length;
    });
  }

  document.addEventListener("change", function (event) {
    var target = event.target;
    if (!(target instanceof HTMLInputElement)) return;
    var all = target.getAttribute("data-pick-all");
    if (all) {
      picks(all).forEach(function (box) { box.checked = target.checked; });
      recount(all);
    } else if (target.hasAttribute("data-pick") && target.getAttribute("form")) {
      recount(target.getAttribute("form"));
    } else if (target.name === "all_matching" && target.form) {
      recount(target.form.id);
    }
  });

  document.addEventListener("htmx:afterSettle", function () {
    document.querySelectorAll("form[data-picks]").forEach(function (form) { recount(form.id); });
  });
})();
