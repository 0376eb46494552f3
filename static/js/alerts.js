// Alarms a supervisor should not miss. On a page with the overview's panels, an alarm
// is said once in a live region when it starts (the panels are redrawn on every poll, so
// the panels themselves announce nothing). While the tab is hidden, the alarms are
// asked for every 15 s (/alarms.json): the tab's title shows their number, and a new
// one raises a desktop notification when the person has allowed them.
(function () {
  "use strict";

  var EVERY_MS = 15000;
  var NOTIFIED_KEY = "switchboard.alarms.notified";

  var news = null; // the live region, which also names the check's URL
  var pageTitle = document.title;
  var timer = null;

  // --- said once when it starts: the alarms on this page, per panel

  var shown = null; // panel id -> {alarm key: text}; null until this page was first read

  function alarmsOnPage() {
    var panels = {};
    document.querySelectorAll("[data-poll]").forEach(function (panel) {
      // A panel that could not be read shows a banner instead: its alarms have not ended.
      if (panel.querySelector(".banner-error") && shown && shown[panel.id]) {
        panels[panel.id] = shown[panel.id];
        return;
      }
      var heading = panel.querySelector("h2");
      var found = {};
      panel.querySelectorAll("[data-alarm]").forEach(function (item) {
        found[item.getAttribute("data-alarm")] =
          (heading ? heading.textContent.trim() + ": " : "") + item.textContent.replace("⚠", "").trim();
      });
      panels[panel.id] = found;
    });
    return panels;
  }

  function announceStarted() {
    var now = alarmsOnPage();
    var started = [];
    Object.keys(now).forEach(function (id) {
      Object.keys(now[id]).forEach(function (key) {
        // The alarms already on the page when it loaded are read with it, not announced.
        if (shown && !(shown[id] && key in shown[id])) {
          started.push(now[id][key]);
        }
      });
      rememberNotified(Object.keys(now[id])); // seen here: no desktop notification for them
    });
    shown = now;
    if (started.length) {
      news.textContent = (started.length === 1 ? "Alarm: " : "Alarms: ") + started.join("; ") + ".";
    }
  }

  // --- while hidden: the count in the title, a notification for each new alarm

  function notified() {
    try {
      return JSON.parse(window.sessionStorage.getItem(NOTIFIED_KEY) || "[]");
    } catch (e) {
      return [];
    }
  }

  function setNotified(keys) {
    try {
      window.sessionStorage.setItem(NOTIFIED_KEY, JSON.stringify(keys));
    } catch (e) {
      // storage refused (private mode): this page's notifications may repeat on the next
    }
  }

  function rememberNotified(keys) {
    var known = notified();
    setNotified(known.concat(keys.filter(function (key) { return known.indexOf(key) < 0; })));
  }

  function mayNotify() {
    return "Notification" in window && window.Notification.permission === "granted";
  }

  function notify(alarm) {
    var note = new window.Notification("Switchboard: " + alarm.panel, { body: alarm.text, tag: "switchboard-" + alarm.key });
    note.onclick = function () {
      window.focus();
    };
  }

  function check() {
    var asked = window.fetch(news.getAttribute("data-alarms-url"), {
      headers: { Accept: "application/json" },
      credentials: "same-origin",
    });
    asked
      .then(function (response) {
        if (!response.ok) {
          throw new Error("alarms: " + response.status);
        }
        return response.json();
      })
      .then(function (answer) {
        if (document.visibilityState === "visible") {
          return; // back in sight while asking: the page shows the alarms itself
        }
        document.title = answer.count ? "(" + answer.count + ") " + pageTitle : pageTitle;
        var known = notified();
        if (mayNotify()) {
          answer.alarms.forEach(function (alarm) {
            if (known.indexOf(alarm.key) < 0) {
              notify(alarm);
            }
          });
        }
        // An alarm that ended is forgotten: when it starts again, it is new.
        setNotified(answer.alarms.map(function (alarm) { return alarm.key; }));
      })
      .catch(function () {
        // Unreachable or signed out: the title keeps the last count; the next check tries again.
      });
  }

  function followVisibility() {
    if (document.visibilityState === "visible") {
      window.clearInterval(timer);
      timer = null;
      document.title = pageTitle;
    } else if (timer === null) {
      check();
      timer = window.setInterval(check, EVERY_MS);
    }
  }

  // --- the "Desktop alerts" button: asks the browser's permission, where there is one to ask

  function setUpPermissionButton() {
    var button = document.getElementById("desktop-alerts");
    if (!button || !("Notification" in window)) {
      return;
    }
    function show() {
      button.hidden = window.Notification.permission !== "default";
    }
    button.addEventListener("click", function () {
      window.Notification.requestPermission().then(show, show);
    });
    show();
  }

  document.addEventListener("DOMContentLoaded", function () {
    news = document.getElementById("alarm-news");
    if (!news) {
      return; // signed out: nothing to watch
    }
    pageTitle = document.title;
    setUpPermissionButton();
    announceStarted();
    document.addEventListener("htmx:load", announceStarted);
    document.addEventListener("visibilitychange", followVisibility);
    followVisibility();
  });
})();
