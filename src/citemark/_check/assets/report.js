
(function () {
  var boxes = Array.prototype.slice.call(
    document.querySelectorAll('#filters input[name="outcome"]'));
  function apply() {
    var shown = {};
    boxes.forEach(function (box) { shown[box.value] = box.checked; });
    document.querySelectorAll('section.row').forEach(function (row) {
      row.classList.toggle('hidden', !shown[row.getAttribute('data-outcome')]);
    });
  }
  var wanted = /^#show=([a-z,]*)$/.exec(window.location.hash);
  if (wanted) {
    var names = wanted[1].split(',');
    boxes.forEach(function (box) { box.checked = names.indexOf(box.value) >= 0; });
  }
  boxes.forEach(function (box) { box.addEventListener('change', apply); });
  apply();
  document.documentElement.classList.add('filtered');
})();
