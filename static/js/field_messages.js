// Forms generated from a workflow's types (dashboard/web/forms.py) carry their bounds on each
// input (min, max, required) and, in data-msg-*, the words the server uses for each rule. The
// forms are novalidate (the browser's bubbles would speak another language), so this checks
// them on submit and says what is wrong beside the field, as the server's answer would: one
// wording for one rule whether the browser, the form or the API caught it. Works for inputs
// htmx swaps in later too.
(function () {
  "use strict";

  function isOurs(target) {
    return target instanceof HTMLInputElement && target.hasAttribute("data-msg-invalid");
  }

  function messageFor(input) {
    var v = input.validity;
    if (v.valueMissing) return input.dataset.msgRequired || "";
    if (v.badInput || v.typeMismatch || v.stepMismatch) return input.dataset.msgInvalid || "";
    if (v.rangeUnderflow) return input.dataset.msgMin || "";
    if (v.rangeOverflow) return input.dataset.msgMax || "";
    return "";
  }

  // The message beside the field, in the same markup the server renders (components/field.html).
  function show(input, text) {
    var control = input.closest(".field-control");
    var field = input.closest(".field");
    var id = input.id + "_error";
    var list = document.getElementById(id);
    if (!text) {
      input.setCustomValidity("");
      if (list && list.hasAttribute("data-client")) list.remove();
      if (field && !field.querySelector(".field-errors")) field.classList.remove("has-error");
      input.setAttribute("aria-invalid", "false");
      return;
    }
    input.setCustomValidity(text);
    if (!list && control) {
      list = document.createElement("ul");
      list.className = "field-errors";
      list.id = id;
      list.setAttribute("data-client", "");
      control.appendChild(list);
    }
    if (list) {
      list.replaceChildren();
      var item = document.createElement("li");
      item.textContent = text;
      list.appendChild(item);
    }
    if (field) field.classList.add("has-error");
    input.setAttribute("aria-invalid", "true");
  }

  function check(input) {
    input.setCustomValidity("");
    var text = input.validity.valid ? "" : messageFor(input);
    show(input, text);
    return !text;
  }

  // Capture phase: before htmx or a confirmation dialog sees a form that cannot be sent.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement)) return;
    var first = null;
    form.querySelectorAll("input[data-msg-invalid]").forEach(function (input) {
      if (!check(input) && !first) first = input;
    });
    if (first) {
      event.preventDefault();
      event.stopImmediatePropagation();
      first.focus();
    }
  }, true);

  document.addEventListener("input", function (event) {
    if (isOurs(event.target) && event.target.getAttribute("aria-invalid") === "true") {
      check(event.target);
    }
  });
})();
