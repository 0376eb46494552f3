// The list pages: a message under a row closes with its button; a success fades by itself
// (CSS) and is then taken out of the page, so the list closes up. Loaded by the list
// templates; no inline script (the CSP).
(function () {
  "use strict";
  function drop(note) {
    var row = note.closest(".row-note-row");
    (row || note).remove();
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-dismiss]");
    var note = button && button.closest(".row-note");
    if (note) { drop(note); }
  });
  document.addEventListener("animationend", function (event) {
    if (event.target.classList && event.target.classList.contains("row-note")) { drop(event.target); }
  });
  // The list was drawn again after an action, perhaps in another order: bring the acted
  // row's message into view ("nearest" leaves the page alone when it shows already).
  document.addEventListener("htmx:afterSettle", function () {
    var note = document.querySelector(".list-card .row-note");
    if (note) { note.scrollIntoView({ block: "nearest", inline: "nearest" }); }
  });
})();
