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
})();
