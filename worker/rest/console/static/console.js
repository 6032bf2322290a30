// The console's one script (no inline script: the CSP forbids them).
// An element with data-poll="URL" data-every="SECONDS" has its page's
// live parts refreshed from that JSON endpoint without a reload:
// #order-status and [data-step] (an order), #now and #count-STATUS (the
// overview). The page works without it; it only stays current.
(function () {
  'use strict';
  function setStatus(element, status) {
    element.textContent = status;
    // getAttribute: an SVG element's className is no string.
    var classes = (element.getAttribute('class') || '').replace(/\s*status-\S+/g, '');
    if (element.tagName.toLowerCase() === 'span') { classes += ' status-' + status.toLowerCase(); }
    element.setAttribute('class', classes);
    var group = element.closest('g.node');
    if (group) { group.setAttribute('class', 'node status-' + status.toLowerCase()); }
  }
  function apply(data) {
    var status = document.getElementById('order-status');
    if (status && data.status) { setStatus(status, data.status); }
    if (data.steps) {
      document.querySelectorAll('[data-step]').forEach(function (element) {
        var found = data.steps[element.getAttribute('data-step')];
        if (found) { setStatus(element, found); }
      });
    }
    if (data.now) { document.getElementById('now').textContent = data.now; }
    if (data.by_status) {
      document.querySelectorAll('[id^="count-"]').forEach(function (element) {
        element.textContent = data.by_status[element.id.slice(6)] || 0;
      });
    }
  }
  function poll(element) {
    var every = 1000 * (parseInt(element.getAttribute('data-every'), 10) || 5);
    function tick() {
      fetch(element.getAttribute('data-poll'), {credentials: 'same-origin', headers: {Accept: 'application/json'}})
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (data) { if (data) { apply(data); } })
        .catch(function () { /* the next tick tries again */ })
        .then(function () { window.setTimeout(tick, every); });
    }
    window.setTimeout(tick, every);
  }
  document.addEventListener('DOMContentLoaded', function () {
    document.querySelectorAll('[data-poll]').forEach(poll);
  });
}());
