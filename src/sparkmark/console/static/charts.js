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
