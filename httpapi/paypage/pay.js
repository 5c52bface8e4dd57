// Veil pay page: copy button and status polling. No dependencies.
(function () {
  "use strict";
  var body = document.body;
  var id = body.getAttribute("data-invoice");
  var $ = function (x) { return document.getElementById(x); };

  var copy = $("copy");
  if (copy) {
    copy.addEventListener("click", function () {
      var text = $("address").textContent;
      var done = function () { copy.textContent = "Copied"; setTimeout(function () { copy.textContent = "Copy address"; }, 2000); };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, fallback);
      } else {
        fallback();
      }
      function fallback() {
        var r = document.createRange();
        r.selectNodeContents($("address"));
        var s = window.getSelection();
        s.removeAllRanges();
        s.addRange(r);
        try { document.execCommand("copy"); done(); } catch (e) { copy.textContent = "Press Ctrl+C"; }
      }
    });
  }

  function show(v) {
    body.setAttribute("data-status", v.expired ? "expired" : v.status);
    if (v.expired) {
      $("pending").hidden = true;
      $("expired").hidden = false;
      $("status").textContent = "expired";
      return;
    }
    if (v.status !== "paid") { return; }
    $("pending").hidden = true;
    $("paid").hidden = false;
    $("status").textContent = "paid";
    $("tx-hash").textContent = v.txHash || "";
    var link = $("tx-link");
    if (v.txLink) { link.href = v.txLink; link.hidden = false; }
  }

  var delay = 2000;
  function poll() {
    fetch("/pay/" + encodeURIComponent(id) + "/status", { cache: "no-store", headers: { "Accept": "application/json" } })
      .then(function (r) { if (!r.ok) { throw new Error("status " + r.status); } return r.json(); })
      .then(function (v) {
        delay = 2000;
        $("checked").textContent = "(checked " + new Date().toLocaleTimeString() + ")";
        show(v);
        if (v.status !== "paid" && !v.expired) { setTimeout(poll, delay); }
      })
      .catch(function () {
        delay = Math.min(delay * 2, 30000);
        $("checked").textContent = "(offline, retrying)";
        setTimeout(poll, delay);
      });
  }
  var initial = body.getAttribute("data-status");
  if (initial !== "paid" && initial !== "expired") { setTimeout(poll, delay); }
})();
