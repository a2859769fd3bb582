// emi back office: the only script besides htmx. No inline scripts anywhere
// (the Content-Security-Policy forbids them).
(function () {
  "use strict";
  // Buttons with data-confirm ask before submitting their form. Without
  // JavaScript the server still requires the explicit confirmation field.
  document.addEventListener("click", function (e) {
    var b = e.target.closest("[data-confirm]");
    if (b && !window.confirm(b.getAttribute("data-confirm"))) {
      e.preventDefault();
    }
  });
  // Elements with data-autohide disappear after N seconds (revealed secrets):
  // their content is replaced by data-autohide-text, so the secret leaves the
  // page's DOM.
  function arm(root) {
    var els = Array.prototype.slice.call(root.querySelectorAll("[data-autohide]"));
    if (root.matches && root.matches("[data-autohide]")) { els.push(root); }
    els.forEach(function (el) {
      if (el.hasAttribute("data-autohide-armed")) { return; }
      el.setAttribute("data-autohide-armed", "");
      var s = parseInt(el.getAttribute("data-autohide"), 10) || 30;
      setTimeout(function () {
        el.textContent = el.getAttribute("data-autohide-text") || "Hidden. Reload the page to see it again if you still may.";
        el.setAttribute("data-hidden", "");
      }, s * 1000);
    });
    // Copy buttons.
    root.querySelectorAll("[data-copy]").forEach(function (b) {
      b.hidden = false;
      b.addEventListener("click", function () {
        var t = document.getElementById(b.getAttribute("data-copy"));
        if (t && navigator.clipboard) { navigator.clipboard.writeText(t.textContent.trim()); b.textContent = "Copied"; }
      });
    });
  }
  document.addEventListener("DOMContentLoaded", function () { arm(document); });
  document.addEventListener("htmx:afterSwap", function (e) { arm(e.target); });
  // htmx swaps only 2xx answers; a target marked data-swap-errors also
  // shows the 4xx answer (a form with its errors).
  document.addEventListener("htmx:beforeSwap", function (e) {
    var st = e.detail.xhr ? e.detail.xhr.status : 0;
    if (st >= 400 && st < 500 && e.detail.target && e.detail.target.closest("[data-swap-errors]")) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
})();
// Document images zoom on click (back office); the hosted KYC form shows the
// fields of the chosen document kind. Both work without JavaScript too: the
// image stays small, the form shows every field.
(function () {
  "use strict";
  document.addEventListener("click", function (e) {
    var img = e.target.closest("img[data-zoom]");
    if (img) { img.classList.toggle("zoomed"); }
  });
  function kind(form) {
    var checked = form.querySelector("input[name=kind]:checked");
    var k = checked ? checked.value : "passport";
    form.classList.toggle("kind-passport", k === "passport");
    form.classList.toggle("kind-idcard", k === "idcard");
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form.hosted-form").forEach(function (form) {
      kind(form);
      form.addEventListener("change", function (e) {
        if (e.target.name === "kind") { kind(form); }
      });
    });
  });
})();
// Copy buttons of identifiers (IBAN, BIC, account number, sort code):
// elements with data-copy-text put that text on the clipboard. They stay
// hidden without JavaScript.
(function () {
  "use strict";
  function show(root) {
    root.querySelectorAll("[data-copy-text]").forEach(function (b) { b.hidden = false; });
  }
  document.addEventListener("click", function (e) {
    var b = e.target.closest("[data-copy-text]");
    if (!b) { return; }
    var done = function (text) {
      b.textContent = text;
      setTimeout(function () { b.textContent = "Copy"; }, 1500);
    };
    if (!navigator.clipboard) { done("Copy failed"); return; }
    navigator.clipboard.writeText(b.getAttribute("data-copy-text")).then(
      function () { done("Copied"); },
      function () { done("Copy failed"); });
  });
  document.addEventListener("DOMContentLoaded", function () { show(document); });
  document.addEventListener("htmx:afterSwap", function (e) { show(e.target); });
})();
