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
  // Elements with data-autohide disappear after N seconds (revealed secrets).
  function arm(root) {
    root.querySelectorAll("[data-autohide]").forEach(function (el) {
      var s = parseInt(el.getAttribute("data-autohide"), 10) || 30;
      setTimeout(function () {
        el.textContent = "Hidden. Reload the page to see it again if you still may.";
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
})();
