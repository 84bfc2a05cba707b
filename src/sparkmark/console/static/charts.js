// Draws each data quality score chart from the numbers its canvas carries.
document.addEventListener("DOMContentLoaded", () => {
  for (const canvas of document.querySelectorAll("canvas.score-chart")) {
    const labels = JSON.parse(canvas.dataset.labels);
    const scores = JSON.parse(canvas.dataset.scores);
    canvas.chart = new Chart(canvas, {
      type: "line",
      data: { labels, datasets: [{ label: "score", data: scores, borderColor: "#1565c0", backgroundColor: "#1565c0", tension: 0.15 }] },
      options: { animation: false, maintainAspectRatio: false, scales: { y: { min: 0, max: 1 } }, plugins: { legend: { display: false } } },
    });
  }
});

// A job's charts: one value per run, oldest first; a point's colour and shape say the
// run's state (so the chart reads without colour too), and a click opens the run.
const STATE_STYLE = {
  SUCCEEDED: ["#2e7d32", "circle"], FAILED: ["#c62828", "crossRot"], ERROR: ["#c62828", "crossRot"],
  TIMEOUT: ["#ef6c00", "triangle"], STOPPED: ["#757575", "rect"], RUNNING: ["#1565c0", "rectRot"],
};
function formatValue(unit, value) {
  if (value === null || value === undefined) return "-";
  if (unit === "bytes") {
    let v = value, i = 0; const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
    return (i ? v.toFixed(1) : v.toFixed(0)) + " " + units[i];
  }
  if (unit === "seconds") return value.toFixed(1) + " s";
  return value.toLocaleString() + " " + unit;
}
document.addEventListener("DOMContentLoaded", () => {
  for (const canvas of document.querySelectorAll("canvas.run-chart")) {
    const labels = JSON.parse(canvas.dataset.labels);
    const values = JSON.parse(canvas.dataset.values);
    const states = JSON.parse(canvas.dataset.states);
    const runs = JSON.parse(canvas.dataset.runs);
    const unit = canvas.dataset.unit;
    const style = (i) => STATE_STYLE[states[i]] || ["#90a4ae", "circle"];
    canvas.chart = new Chart(canvas, {
      type: "line",
      data: { labels, datasets: [{ label: canvas.dataset.key, data: values, borderColor: "#90a4ae", spanGaps: true,
        pointBackgroundColor: values.map((_, i) => style(i)[0]), pointBorderColor: values.map((_, i) => style(i)[0]),
        pointStyle: values.map((_, i) => style(i)[1]), pointRadius: 4, pointHoverRadius: 6 }] },
      options: {
        animation: false, maintainAspectRatio: false,
        scales: { y: { beginAtZero: true, ticks: { callback: (v) => formatValue(unit, v) } } },
        plugins: { legend: { display: false }, tooltip: { callbacks: {
          label: (ctx) => `${formatValue(unit, ctx.parsed.y)} · ${states[ctx.dataIndex]}`,
          footer: (items) => runs[items[0].dataIndex].slice(0, 14) + "…" } } },
        onClick: (_event, elements) => { if (elements.length) window.location.href = "/runs/" + runs[elements[0].index]; },
      },
    });
  }
});

// A statistic's values with the band the anomaly model expected for each (from the
// points before it): points outside it are red crosses, excluded points grey squares.
document.addEventListener("DOMContentLoaded", () => {
  for (const canvas of document.querySelectorAll("canvas.metric-chart")) {
    const labels = JSON.parse(canvas.dataset.labels);
    const values = JSON.parse(canvas.dataset.values);
    const lows = JSON.parse(canvas.dataset.lows);
    const highs = JSON.parse(canvas.dataset.highs);
    const flagged = new Set(JSON.parse(canvas.dataset.flagged));
    const excluded = new Set(JSON.parse(canvas.dataset.excluded));
    const colour = (i) => (excluded.has(i) ? "#9e9e9e" : flagged.has(i) ? "#c62828" : "#1565c0");
    const shape = (i) => (excluded.has(i) ? "rect" : flagged.has(i) ? "crossRot" : "circle");
    canvas.chart = new Chart(canvas, {
      type: "line",
      data: { labels, datasets: [
        { label: "expected low", data: lows, borderColor: "rgba(46,125,50,0.4)", pointRadius: 0, spanGaps: true },
        { label: "expected high", data: highs, borderColor: "rgba(46,125,50,0.4)", backgroundColor: "rgba(46,125,50,0.12)", fill: "-1", pointRadius: 0, spanGaps: true },
        { label: canvas.dataset.metric, data: values, borderColor: "#90a4ae",
          pointBackgroundColor: values.map((_, i) => colour(i)), pointBorderColor: values.map((_, i) => colour(i)),
          pointStyle: values.map((_, i) => shape(i)), pointRadius: values.map((_, i) => (flagged.has(i) ? 7 : 4)) },
      ] },
      options: { animation: false, maintainAspectRatio: false, plugins: { legend: { display: false } } },
    });
  }
});
