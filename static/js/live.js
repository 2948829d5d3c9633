/*
 * Live updates: what htmx's websocket extension does not do for us. Plain ES2020, CSP-safe.
 *
 * The extension opens each [hx-ext="ws"][ws-connect] element's socket, reconnects after an
 * abnormal close, and swaps every element of a message out of band (hx-swap-oob): the server
 * sends HTML rendered from the pages' own templates (dashboard/web/live/fragments.py). Left here:
 *   - resume: a sequenced stream's element keeps data-last-seq (the page renders the value it was
 *     built from); every (re)connect asks for what came after it, as ?after=N;
 *   - repeats: a message led by an element with data-seq="N", N <= data-last-seq, is dropped;
 *   - reconnecting after the closes the extension leaves alone (a server going away), and
 *     never after a refusal (signed out, access revoked, no such run);
 *   - the "Live" indicator, "Live" only while every socket of the page is open;
 *   - live regions ([data-live-region] with an id): parts of a page that reload through their own
 *     view on a signal (base.html's live_signal), and also on "live-refresh", sent from here:
 *       . a signal that comes while the region's last reload is still out is queued by htmx on
 *         the element that asked, which that reload then replaces: the queued reload would never
 *         go, and the region would show the state of the first signal for good (a run's header
 *         offering Cancel after it completed). It is remembered, and asked for once the new
 *         region is in;
 *       . a reload that would swap a region while one of its <dialog>s is open waits for the
 *         dialog to close, so a confirmation is not pulled from under the operator: if they
 *         confirm, the action's own answer redraws the region (saying so when it came too late);
 *         if not, the region asks again; so does a part swapped out of band that holds an open
 *         dialog (then every region asks again);
 *       . a region can follow a key that an element the socket redraws carries
 *         (data-live-key on both, data-live-key-for="<region id>" on that element): when the
 *         element comes in with a key other than the region's, the region is stale whatever
 *         signal went missing (one sent before the socket was open is never replayed), and it
 *         reloads.
 */
(function () {
  "use strict";

  var htmx = window.htmx;
  if (!htmx) return;

  var RETRIED_BY_EXTENSION = { 1006: 1, 1011: 1, 1012: 1, 1013: 1 };
  // 1008 = policy violation, 1009 and 4009 = frame too big, 44xx = the consumers' refusals.
  // 4011 (the channel layer was lost) is none of these: reconnect and replay.
  var FINAL_CLOSE_CODES = { 1008: 1, 1009: 1, 4009: 1, 4401: 1, 4403: 1, 4404: 1 };
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

  var inflight = {};
  var missed = {};
  var held = {};

  function liveRegion(elt) {
    return elt && elt.id && elt.hasAttribute && elt.hasAttribute("data-live-region") ? elt : null;
  }

  function openDialogIn(id) {
    var region = document.getElementById(id);
    return !!(region && region.querySelector("dialog[open]"));
  }

  function refresh(id) {
    var region = document.getElementById(id);
    if (region) htmx.trigger(region, "live-refresh");
  }

  function settled(id) {
    inflight[id] = false;
    if (!missed[id]) return;
    missed[id] = false;
    if (openDialogIn(id)) held[id] = true;
    else refresh(id);
  }

  function followKey(source) {
    var id = source.getAttribute && source.getAttribute("data-live-key-for");
    var region = id ? liveRegion(document.getElementById(id)) : null;
    if (!region || region.getAttribute("data-live-key") === source.getAttribute("data-live-key")) return;
    if (inflight[id]) missed[id] = true;
    else if (openDialogIn(id)) held[id] = true;
    else refresh(id);
  }

  // htmx:confirm comes for every trigger, before htmx decides to queue it.
  document.addEventListener("htmx:confirm", function (event) {
    var region = liveRegion(event.target);
    if (region && inflight[region.id]) missed[region.id] = true;
  });
  document.addEventListener("htmx:beforeRequest", function (event) {
    var region = liveRegion(event.target);
    if (region) inflight[region.id] = true;
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    var region = liveRegion(event.detail.target);
    var config = event.detail.requestConfig;
    if (!region || !config || config.verb !== "get" || !region.querySelector("dialog[open]")) return;
    event.detail.shouldSwap = false;
    held[region.id] = true;
  });
  // After a swap the element that asked is gone and its own events reach nobody; the new
  // region's htmx:load says it is in. Without a swap (held, or a failed reload), the old one says.
  document.addEventListener("htmx:load", function (event) {
    followKey(event.target);
    var region = liveRegion(event.target);
    if (!region) return;
    held[region.id] = false;
    settled(region.id);
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    var region = liveRegion(event.target);
    if (region && region.isConnected) settled(region.id);
  });
  // The same for a part swapped out of band (a reload's or a message's claim line): one that
  // holds an open dialog stays until the dialog closes; cancelled, every live region reloads,
  // since which one sent the part is not known.
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var target = event.detail.target;
    var open = target && target.querySelector && target.querySelector("dialog[open]");
    if (!open) return;
    event.detail.shouldSwap = false;
    open.setAttribute("data-live-held", "");
  });
  // "close" does not bubble; its capture phase still passes the document.
  document.addEventListener("close", function (event) {
    var dialog = event.target;
    if (!(dialog instanceof HTMLDialogElement)) return;
    if (dialog.hasAttribute("data-live-held")) {
      dialog.removeAttribute("data-live-held");
      if (dialog.returnValue !== "confirm") {
        document.querySelectorAll("[data-live-region][id]").forEach(function (elt) { refresh(elt.id); });
      }
    }
    var region = dialog.parentElement && dialog.parentElement.closest("[data-live-region]");
    if (!region || !held[region.id]) return;
    held[region.id] = false;
    if (dialog.returnValue !== "confirm") refresh(region.id);
  }, true);

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
