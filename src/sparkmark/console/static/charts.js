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
