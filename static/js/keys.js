// emi back office: keyboard shortcuts (issue 23). j / k move between the
// rows of a queue (the row's first link takes the focus, so Enter opens
// it), n takes the next case ([data-next-case]: a link, or a form that
// claims the next application), ? opens the help dialog. Nothing happens
// while the focus is in a field or with a modifier key held, so typing
// a reason never triggers a shortcut.
(function () {
  "use strict";
  function typing(el) {
    if (!el) { return false; }
    var tag = el.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable;
  }
  function rows() {
    var t = document.querySelector("table[data-queue]");
    return t ? Array.prototype.slice.call(t.querySelectorAll("tbody tr")) : [];
  }
  function move(step) {
    var rs = rows();
    if (rs.length === 0) { return; }
    var cur = rs.findIndex(function (r) { return r.classList.contains("kb-current"); });
    var next = cur < 0 ? (step > 0 ? 0 : rs.length - 1) : Math.min(Math.max(cur + step, 0), rs.length - 1);
    if (cur >= 0) { rs[cur].classList.remove("kb-current"); rs[cur].removeAttribute("aria-current"); }
    var row = rs[next];
    row.classList.add("kb-current");
    row.setAttribute("aria-current", "true");
    var link = row.querySelector("a[href]");
    if (link) { link.focus(); } else { row.scrollIntoView({ block: "nearest" }); }
  }
  function nextCase() {
    var el = document.querySelector("[data-next-case]");
    if (el) {
      if (el.tagName === "FORM") { el.requestSubmit(); } else { el.click(); }
      return;
    }
    var rs = rows();
    var link = rs.length ? rs[0].querySelector("a[href]") : null;
    if (link) { link.click(); }
  }
  document.addEventListener("keydown", function (e) {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) { return; }
    var help = document.getElementById("kb-help");
    if (help && help.open) { return; }
    switch (e.key) {
      case "j": move(1); break;
      case "k": move(-1); break;
      case "n": nextCase(); break;
      case "?":
        if (help && help.showModal) { help.showModal(); }
        break;
      default: return;
    }
    e.preventDefault();
  });
})();
