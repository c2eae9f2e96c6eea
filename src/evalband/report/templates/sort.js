(function () {
  "use strict";
  var NUMBER = /^[+\-\u2212]?(\d+(\.\d*)?|\.\d+)(e[+\-]?\d+)?/i;
  function key(cell) {
    var raw = cell.getAttribute("data-sort");
    var text = raw === null ? cell.textContent.trim() : raw;
    var match = text.replace("\u2212", "-").match(NUMBER);
    return match ? { num: parseFloat(match[0]), text: text } : { num: null, text: text };
  }
  function compare(a, b) {
    if (a.num !== null && b.num !== null) { return a.num - b.num; }
    if (a.num !== null) { return -1; }
    if (b.num !== null) { return 1; }
    return a.text.localeCompare(b.text, undefined, { numeric: true });
  }
  function sortBy(table, index, th) {
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(th.parentNode.cells, function (other) {
      other.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows).map(function (row, i) {
      return { row: row, key: key(row.cells[index] || row.cells[0]), i: i };
    });
    rows.sort(function (a, b) {
      var c = compare(a.key, b.key);
      if (!ascending) { c = -c; }
      return c !== 0 ? c : a.i - b.i;
    });
    rows.forEach(function (item) { body.appendChild(item.row); });
  }
  function init() {
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (t) {
      if (!t.tHead || !t.tBodies.length) { return; }
      Array.prototype.forEach.call(t.tHead.rows[0].cells, function (th, index) {
        th.tabIndex = 0;
        th.title = "sort by " + th.textContent.trim();
        th.addEventListener("click", function () { sortBy(t, index, th); });
        th.addEventListener("keydown", function (e) {
          if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(t, index, th); }
        });
      });
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else { init(); }
})();
