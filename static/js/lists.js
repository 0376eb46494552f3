// The list pages: a message in a row closes with its button (successes also fade by
// themselves, in CSS). Loaded by the list templates; no inline script (the CSP).
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-dismiss]");
    if (button) {
      var note = button.closest(".row-note");
      if (note) { note.remove(); }
    }
  });
  // On a phone the table scrolls inside its card: after an action, scroll the card (and the
  // page) just enough that the row's new message shows. "nearest" leaves it alone if it does.
  document.addEventListener("htmx:afterSettle", function (event) {
    var row = event.target;
    var note = row.querySelector && row.querySelector(".row-note, .row-gone-note");
    if (note) { note.scrollIntoView({ block: "nearest", inline: "nearest" }); }
  });
})();
