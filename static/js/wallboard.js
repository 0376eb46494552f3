// The wallboard says when its figures are old. It is read from across the room by people
// who cannot tell that it stopped refreshing (the server or DynamoDB unreachable, or a
// request that hangs): past two refreshes without new figures, the figures fade and a
// note says since when they have not changed.
(function () {
  "use strict";

  var answeredAt = performance.now();
  var lastUpdated = ""; // the time the board last showed figures at (a banner shows none)

  document.addEventListener("htmx:beforeSwap", function (event) {
    var status = event.detail && event.detail.xhr ? event.detail.xhr.status : 0;
    if (status >= 200 && status < 300) {
      answeredAt = performance.now();
    }
  });

  function check() {
    var board = document.getElementById("board");
    var note = document.getElementById("stale-note");
    if (!board || !note) {
      return;
    }
    var every = parseFloat(board.getAttribute("data-refresh-seconds")) || 5;
    var stale = performance.now() - answeredAt > (2 * every + 1) * 1000;
    var shown = board.querySelector("[data-updated]");
    if (shown) {
      lastUpdated = shown.textContent;
    }
    var text = stale ? "Not updated since " + (lastUpdated || "this page opened") + "." : "";
    if (note.textContent !== text) {
      note.textContent = text;
    }
    document.body.classList.toggle("is-stale", stale);
  }

  document.addEventListener("DOMContentLoaded", function () {
    window.setInterval(check, 1000);
  });
})();
