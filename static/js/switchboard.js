// Switchboard's own script, loaded after htmx. The Content-Security-Policy allows no
// inline script and no eval, so what htmx trigger filters did is done here instead.
(function () {
  "use strict";

  var PAUSED_KEY = "switchboard.overview.paused";

  // --- the menu: folds behind a button on narrow screens (without this script it stays open)

  function setUpMenu() {
    var toggle = document.querySelector(".menu-toggle");
    var menu = document.getElementById("site-menu");
    if (!toggle || !menu) {
      return;
    }
    var bar = toggle.closest(".topbar");
    function open(yes) {
      bar.classList.toggle("menu-open", yes);
      toggle.setAttribute("aria-expanded", yes ? "true" : "false");
    }
    toggle.hidden = false;
    bar.classList.add("menu-folds");
    toggle.addEventListener("click", function () {
      open(toggle.getAttribute("aria-expanded") !== "true");
    });
    bar.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && toggle.getAttribute("aria-expanded") === "true") {
        open(false);
        toggle.focus();
      }
    });
  }

  // --- the skip link: focus lands on the content, so the next Tab starts there

  function setUpSkipLink() {
    var link = document.querySelector(".skip-link");
    var main = document.getElementById("content");
    if (link && main) {
      link.addEventListener("click", function (event) {
        event.preventDefault();
        main.focus();
        main.scrollIntoView();
      });
    }
  }

  // --- the page's messages: a faded success leaves; no more than three stay, newest first

  var MAX_MESSAGES = 3;

  document.addEventListener("animationend", function (event) {
    var message = event.target;
    if (message.classList && message.classList.contains("msg") && message.parentElement &&
        message.parentElement.id === "messages") {
      message.remove();
    }
  });

  document.addEventListener("htmx:afterSettle", function () {
    var list = document.getElementById("messages");
    while (list && list.children.length > MAX_MESSAGES) {
      list.removeChild(list.lastElementChild);
    }
  });

  // --- tables as cards on a phone: each cell carries its column's name (data-label) for
  // the CSS to show beside the value (not one marked "unlabelled", whose value says what
  // it is); the first cell of a row is the card's title.

  function labelCells(root) {
    Array.prototype.forEach.call((root || document).querySelectorAll("table.grid"), function (table) {
      var heads = table.tHead ? table.tHead.rows[table.tHead.rows.length - 1] : null;
      if (!heads) {
        return;
      }
      var names = [];
      Array.prototype.forEach.call(heads.cells, function (th) {
        for (var i = 0; i < th.colSpan; i += 1) {
          names.push(th.textContent.trim());
        }
      });
      Array.prototype.forEach.call(table.tBodies, function (body) {
        Array.prototype.forEach.call(body.rows, function (row) {
          if (row.classList.contains("row-note-row")) {
            return;
          }
          var column = 0;
          var titled = false;
          Array.prototype.forEach.call(row.cells, function (cell) {
            var select = cell.classList.contains("select");
            if (!select && !titled) {
              titled = true;
              cell.classList.add("card-title");
            } else if (!select && !cell.classList.contains("row-end") && !cell.classList.contains("unlabelled") &&
                       cell.colSpan === 1 &&
                       names[column] && !cell.hasAttribute("data-label")) {
              cell.setAttribute("data-label", names[column]);
            }
            column += cell.colSpan;
          });
        });
      });
    });
  }

  document.addEventListener("htmx:afterSettle", function () {
    labelCells(document);
  });

  // --- a table wider than its card scrolls inside it: focusable then, so that the keyboard
  // can scroll it too (with a mouse or a finger it simply scrolls)

  function letKeyboardScroll() {
    document.querySelectorAll("table.grid").forEach(function (table) {
      if (table.scrollWidth > table.clientWidth) {
        table.setAttribute("tabindex", "0");
      } else if (table.getAttribute("tabindex") === "0") {
        table.removeAttribute("tabindex");
      }
    });
  }

  // --- the overview's polling panels: paused or not, fresh or stale

  function pollPanels() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-poll]"));
  }

  function paused() {
    try {
      return window.localStorage.getItem(PAUSED_KEY) === "1";
    } catch (e) {
      return false; // storage refused (private mode): never paused
    }
  }

  function seconds(every) {
    var match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(every || "");
    if (!match) {
      return 2;
    }
    var n = parseFloat(match[1]);
    return match[2] === "ms" ? n / 1000 : match[2] === "m" ? n * 60 : n;
  }

  // Per panel id: when it last answered with figures (this page's clock, ms), the <time> it
  // showed then, and whether it is shown stale now.
  var fresh = {};

  function stateOf(id) {
    if (!fresh[id]) {
      fresh[id] = { answeredAt: performance.now(), updated: null, stale: false };
    }
    return fresh[id];
  }

  // Waiting starts again (hidden tab, paused): a panel has two intervals from now to answer.
  function restartWaiting() {
    var moment = performance.now();
    Object.keys(fresh).forEach(function (id) {
      fresh[id].answeredAt = Math.max(fresh[id].answeredAt, moment);
    });
  }

  // The live region names the stale panels, and says so once they are all fresh again.
  var announced = "";

  function announce() {
    var note = document.getElementById("poll-note");
    var stale = pollPanels().filter(function (panel) {
      return stateOf(panel.id).stale;
    });
    var text = stale
      .map(function (panel) {
        var updated = stateOf(panel.id).updated;
        return panelName(panel) + (updated ? " (since " + updated.textContent + ")" : "");
      })
      .join(", ");
    if (text) {
      text = "Not updated for two intervals: " + text + ".";
    } else if (announced) {
      text = "All panels are up to date again.";
    }
    if (note && text && text !== note.textContent) {
      note.textContent = text;
    }
    announced = stale.length ? text : "";
  }

  function panelName(panel) {
    var heading = panel.querySelector("h2");
    return heading ? heading.textContent.trim() : panel.id;
  }

  // Shows one panel's freshness: its "updated" time (the last one it had when this answer
  // carried none, e.g. an error banner) and, past two intervals without figures, "stale".
  function paint(panel) {
    var state = stateOf(panel.id);
    var updated = panel.querySelector("[data-updated]");
    var shown = updated && updated.querySelector("time");
    if (shown) {
      state.updated = shown.cloneNode(true);
    } else if (updated && state.updated) {
      updated.textContent = "updated ";
      updated.appendChild(state.updated.cloneNode(true));
    }
    var waiting = !paused() && document.visibilityState === "visible";
    var late = performance.now() - state.answeredAt > (2 * seconds(panel.getAttribute("data-poll")) + 1) * 1000;
    state.stale = waiting && late;
    panel.classList.toggle("is-stale", state.stale);
  }

  function paintAll() {
    pollPanels().forEach(paint);
    announce();
  }

  function showPauseControl() {
    var button = document.getElementById("poll-toggle");
    if (!button) {
      return;
    }
    var isPaused = paused();
    button.hidden = false;
    button.textContent = isPaused ? "Resume updates" : "Pause updates";
    var state = document.getElementById("poll-state");
    if (state) {
      state.textContent = isPaused ? "Updates are paused." : "";
    }
  }

  function setUpPauseControl() {
    var button = document.getElementById("poll-toggle");
    if (!button) {
      return;
    }
    showPauseControl();
    button.addEventListener("click", function () {
      var resume = paused();
      try {
        if (resume) {
          window.localStorage.removeItem(PAUSED_KEY);
        } else {
          window.localStorage.setItem(PAUSED_KEY, "1");
        }
      } catch (e) {
        return;
      }
      showPauseControl();
      if (resume) {
        openLive();
        restartWaiting();
        document.body.dispatchEvent(new CustomEvent("switchboard-visible"));
      } else {
        closeLive();
      }
      paintAll();
    });
  }

  // --- the overview's live stream: while it is open the server pushes each panel as it is
  // read (Server-Sent Events, one connection for all the panels) and the panels' own polling
  // stands by; closed, refused (204) or without EventSource, the panels poll as before.

  var live = { source: null, open: false, retry: null };
  var LIVE_RETRY_MS = 30000;

  function liveBar() {
    return document.querySelector("[data-live]");
  }

  function liveUrl() {
    var bar = liveBar();
    return bar ? bar.getAttribute("data-live") : null;
  }

  // The bar says whether the stream is open (`data-live-open`), for whoever looks at the page.
  function markLive(open) {
    live.open = open;
    var bar = liveBar();
    if (bar) {
      bar.toggleAttribute("data-live-open", open);
    }
  }

  function closeLive() {
    if (live.source) {
      live.source.close();
    }
    live.source = null;
    markLive(false);
  }

  function swapPushed(event) {
    var panel = document.getElementById(event.type + "-panel");
    if (!panel || paused() || !window.htmx) {
      return;
    }
    stateOf(panel.id).answeredAt = performance.now();
    window.htmx.swap(panel, event.data, { swapStyle: "outerHTML" });
  }

  function openLive() {
    var url = liveUrl();
    if (!url || !window.EventSource || live.source || paused() || document.visibilityState !== "visible") {
      return;
    }
    var source = new EventSource(url);
    live.source = source;
    source.addEventListener("open", function () {
      markLive(true);
    });
    source.addEventListener("error", function () {
      markLive(false);
      if (source.readyState === EventSource.CLOSED && live.source === source) {
        // Refused or gone for good: poll, and try the stream again later.
        live.source = null;
        window.clearTimeout(live.retry);
        live.retry = window.setTimeout(openLive, LIVE_RETRY_MS);
      }
    });
    pollPanels().forEach(function (panel) {
      source.addEventListener(panel.id.replace(/-panel$/, ""), swapPushed);
    });
  }

  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") {
      openLive();
    } else {
      closeLive();
    }
  });

  // Left for another page the stream closes (its server thread goes back); a page the
  // browser shows again from its back-forward cache opens it anew.
  window.addEventListener("pagehide", closeLive);
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) {
      openLive();
    }
  });

  // Polling panels ask nothing while the tab is hidden or the updates are paused ...
  document.addEventListener("htmx:confirm", function (event) {
    var polls = event.target.hasAttribute && event.target.hasAttribute("data-poll");
    // ... nor on their timer while the live stream brings them (a change or the tab coming back still asks).
    var timer = !(event.detail && event.detail.triggeringEvent);
    if (polls && (document.visibilityState !== "visible" || paused() || (live.open && timer))) {
      event.preventDefault();
    }
  });

  // ... and refresh at once when the tab comes back: they listen for this event on the body.
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible" && document.body) {
      restartWaiting();
      if (!paused()) {
        document.body.dispatchEvent(new CustomEvent("switchboard-visible"));
      }
    }
  });

  // An answer with figures (2xx) makes a panel fresh; a failed one (a 503 banner, no
  // connection) leaves it as it was, so two intervals of those make it stale. (Seen before
  // the swap: afterwards the panel that asked is gone and htmx's later events name its parent.)
  document.addEventListener("htmx:beforeSwap", function (event) {
    var elt = event.detail && event.detail.elt;
    var status = event.detail && event.detail.xhr ? event.detail.xhr.status : 0;
    if (elt && elt.id && elt.hasAttribute("data-poll") && status >= 200 && status < 300) {
      stateOf(elt.id).answeredAt = performance.now();
    }
  });

  document.addEventListener("htmx:load", function (event) {
    var elt = event.detail && event.detail.elt;
    if (elt && elt.hasAttribute && elt.hasAttribute("data-poll")) {
      paint(elt);
      announce();
    }
  });

  // --- confirmations: a form with data-confirm asks in the page's <dialog> before it is sent.
  // The dialog is modal, so it shows above every table and scroll box at any width. Confirmed,
  // the form is sent again with confirmed=1 (by htmx when it has hx-post). Without this script
  // the form posts unconfirmed and the server asks on a page of its own.

  function confirmText(form) {
    var text = form.getAttribute("data-confirm");
    var choice = form.querySelector("select[data-confirm-choice]");
    if (choice && choice.selectedIndex >= 0) {
      text += " " + choice.getAttribute("data-confirm-choice") + ": " + choice.options[choice.selectedIndex].text + ".";
    }
    return text;
  }

  function ask(form) {
    var dialog = document.getElementById("confirm-dialog");
    if (!dialog || typeof dialog.showModal !== "function") {
      return false; // no dialog support: the server asks instead
    }
    document.getElementById("confirm-title").textContent = form.getAttribute("data-confirm-title") || "Are you sure?";
    document.getElementById("confirm-question").textContent = confirmText(form);
    var ok = document.getElementById("confirm-ok");
    ok.textContent = form.getAttribute("data-confirm-button") || "Confirm";
    var reasonName = form.getAttribute("data-confirm-reason");
    var reasonRow = document.getElementById("confirm-reason-row");
    var reason = document.getElementById("confirm-reason");
    reasonRow.hidden = !reasonName;
    reason.value = "";
    dialog.returnValue = "";
    dialog.onclose = function () {
      if (dialog.returnValue !== "ok" || !form.isConnected) {
        return;
      }
      if (reasonName) {
        form.elements[reasonName].value = reason.value;
      }
      var yes = form.querySelector("input[name=confirmed]");
      if (!yes) {
        yes = document.createElement("input");
        yes.type = "hidden";
        yes.name = "confirmed";
        form.appendChild(yes);
      }
      yes.value = "1";
      form.setAttribute("data-confirmed", "1");
      form.requestSubmit();
    };
    dialog.showModal();
    (reasonName ? reason : ok).focus();
    return true;
  }

  // Capturing, so the question comes before htmx sees the submit.
  document.addEventListener(
    "submit",
    function (event) {
      var form = event.target;
      if (!form.hasAttribute || !form.hasAttribute("data-confirm")) {
        return;
      }
      if (form.getAttribute("data-confirmed") === "1") {
        // This one goes (its values are read during this event); the next submit asks again.
        form.removeAttribute("data-confirmed");
        window.setTimeout(function () {
          var yes = form.querySelector("input[name=confirmed]");
          if (yes) {
            yes.remove();
          }
        }, 0);
        return;
      }
      if (ask(form)) {
        event.preventDefault();
        event.stopImmediatePropagation();
      }
    },
    true
  );

  // An offer's countdown (<time data-countdown="ISO">in 18 s</time>): ticked each second
  // from the deadline the server wrote, so a ringing call says how long it has left.
  function tickCountdowns() {
    var now = Date.now();
    document.querySelectorAll("time[data-countdown]").forEach(function (el) {
      var left = Math.round((Date.parse(el.getAttribute("datetime")) - now) / 1000);
      el.textContent = left >= 0 ? "in " + left + " s" : "overdue " + -left + " s";
      el.classList.toggle("overdue", left < 0);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (document.querySelector("time[data-countdown]")) {
      window.setInterval(tickCountdowns, 1000);
    }
    document.addEventListener("htmx:load", function () {
      if (document.querySelector("time[data-countdown]") && !window.switchboardCountdown) {
        window.switchboardCountdown = window.setInterval(tickCountdowns, 1000);
      }
    });
    labelCells(document);
    setUpMenu();
    setUpSkipLink();
    setUpPauseControl();
    letKeyboardScroll();
    document.addEventListener("htmx:load", letKeyboardScroll);
    window.addEventListener("resize", letKeyboardScroll);
    if (pollPanels().length) {
      paintAll();
      window.setInterval(paintAll, 500);
      openLive();
    }
  });
})();
