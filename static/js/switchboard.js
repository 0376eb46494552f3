// Switchboard's own script, loaded after htmx. The Content-Security-Policy allows no
// inline script and no eval, so what htmx trigger filters did is done here instead.
(function () {
  "use strict";

  // Panels that poll (data-poll, from the {% poll %} tag) ask nothing while the tab is hidden ...
  document.addEventListener("htmx:confirm", function (event) {
    if (document.visibilityState !== "visible" && event.target.hasAttribute("data-poll")) {
      event.preventDefault();
    }
  });

  // ... and refresh at once when it comes back: they listen for this event on the body.
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible" && document.body) {
      document.body.dispatchEvent(new CustomEvent("switchboard-visible"));
    }
  });
})();
