/*
 * Live updates: what htmx's websocket extension does not do for us. Plain ES2020, CSP-safe.
 *
 * The extension opens each [hx-ext="ws"][ws-connect] element's socket, reconnects after an
 * abnormal close, and swaps every element of a message out of band (hx-swap-oob): the server
 * sends HTML rendered from the pages' own templates (dashboard/web/live_fragments.py). Left here:
 *   - resume: a sequenced stream's element keeps data-last-seq (the page renders the value it was
 *     built from); every (re)connect asks for what came after it, as ?after=N;
 *   - repeats: a message led by an element with data-seq="N", N <= data-last-seq, is dropped;
 *   - reconnecting after the closes the extension leaves alone (a server going away), and
 *     never after a refusal (signed out, access revoked, no such run);
 *   - the "Live" indicator, "Live" only while every socket of the page is open.
 */
(function () {
  "use strict";

  var htmx = window.htmx;
  if (!htmx) return;

  var RETRIED_BY_EXTENSION = { 1006: 1, 1011: 1, 1012: 1, 1013: 1 };
  // 1008 = policy violation, 1009 = frame too big, 44xx = the consumers' refusals.
  var FINAL_CLOSE_CODES = { 1008: 1, 1009: 1, 4401: 1, 4403: 1, 4404: 1 };
  var RECONNECT_MAX_MS = 5000;
  var LABELS = { live: "Live", reconnecting: "Reconnecting…", offline: "Offline, reload the page" };
  var LEADING_SEQ = /^\s*<[^>]*\sdata-seq="(\d+)"/;

  function lastSeq(socketElt) {
    var n = parseInt(socketElt.getAttribute("data-last-seq") || "", 10);
    return isNaN(n) ? null : n;
  }

  // The extension hands us the URL only; the stream's element is the one with the same path.
  function socketElement(url) {
    var path = new URL(url, window.location.href).pathname;
    var found = null;
    document.querySelectorAll("[ws-connect]").forEach(function (elt) {
      if (new URL(elt.getAttribute("ws-connect"), window.location.href).pathname === path) found = elt;
    });
    return found;
  }

  // The extension reconnects to the URL it started with; resume from what the page has instead.
  htmx.createWebSocket = function (url) {
    var elt = socketElement(url);
    var seq = elt ? lastSeq(elt) : null;
    var resumed = new URL(url);
    if (seq !== null) resumed.searchParams.set("after", String(seq));
    return new WebSocket(resumed.toString());
  };

  document.addEventListener("htmx:wsBeforeMessage", function (event) {
    var found = LEADING_SEQ.exec(event.detail.message);
    if (!found) return;
    var seq = parseInt(found[1], 10);
    var last = lastSeq(event.target);
    if (last !== null && seq <= last) {
      event.preventDefault(); // already shown
      return;
    }
    event.target.setAttribute("data-last-seq", String(seq));
  });

  document.addEventListener("htmx:wsConnecting", function (event) { setState(event.target, "reconnecting"); });
  document.addEventListener("htmx:wsOpen", function (event) { setState(event.target, "live"); });
  document.addEventListener("htmx:wsClose", function (event) {
    var elt = event.target;
    var code = event.detail.event.code;
    if (!elt.isConnected) return; // swapped away: the extension closed it on purpose
    setState(elt, FINAL_CLOSE_CODES[code] ? "offline" : "reconnecting");
    if (FINAL_CLOSE_CODES[code] || RETRIED_BY_EXTENSION[code]) return;
    // Jittered: after a server restart every open tab would otherwise reconnect in lockstep.
    var reconnect = event.detail.socketWrapper.reconnect;
    setTimeout(function () { if (elt.isConnected) reconnect(); }, Math.random() * RECONNECT_MAX_MS);
  });

  function setState(socketElt, state) {
    socketElt.setAttribute("data-live", state);
    var indicator = document.getElementById("live-indicator");
    if (!indicator) return;
    var states = Array.prototype.map.call(document.querySelectorAll("[ws-connect]"), function (elt) {
      return elt.getAttribute("data-live") || "reconnecting";
    });
    var overall = states.indexOf("offline") >= 0 ? "offline"
      : states.every(function (s) { return s === "live"; }) ? "live" : "reconnecting";
    // Unchanged: leave the text alone, or screen readers announce it again.
    if (indicator.getAttribute("data-state") === overall && !indicator.hidden) return;
    indicator.hidden = false;
    indicator.setAttribute("data-state", overall);
    (indicator.querySelector(".live-label") || indicator).textContent = LABELS[overall];
  }
})();
