// The dashboard's only script: draws the charts (Chart.js, vendored), sorts tables and
// reloads a page while a job runs. Every chart's numbers are also in a table beside it.
"use strict";

// Okabe and Ito's palette, told apart under the common colour-vision deficiencies.
const PALETTE = { blue: "#0072B2", orange: "#E69F00", vermillion: "#D55E00", black: "#000000" };

// A chart whose spec has a threshold ({value, label}) draws it as a dashed line across
// the plot, labelled at its right end (the heavy hitters' detection threshold).
const THRESHOLD_LINE = {
  id: "thresholdLine",
  afterDatasetsDraw(chart, _args, options) {
    const { ctx, chartArea, scales } = chart;
    const y = scales.y.getPixelForValue(options.value);
    ctx.save();
    ctx.strokeStyle = PALETTE.vermillion;
    ctx.lineWidth = 2;
    ctx.setLineDash([8, 4]);
    ctx.beginPath();
    ctx.moveTo(chartArea.left, y);
    ctx.lineTo(chartArea.right, y);
    ctx.stroke();
    ctx.font = "600 13px system-ui, sans-serif";
    ctx.textAlign = "right";
    ctx.textBaseline = "bottom";
    const width = ctx.measureText(options.label).width;
    ctx.fillStyle = "rgba(255, 255, 255, 0.85)";
    ctx.fillRect(chartArea.right - width - 8, y - 19, width + 8, 16);
    ctx.fillStyle = PALETTE.vermillion;
    ctx.fillText(options.label, chartArea.right - 4, y - 4);
    ctx.restore();
    chart.canvas.dataset.thresholdY = String(y);
  },
};

function drawChart(canvas) {
  const source = document.getElementById(canvas.id + "-data");
  if (!source) return;
  const spec = JSON.parse(source.textContent);
  if (typeof window.Chart === "undefined") {
    canvas.replaceWith(document.createTextNode("The chart library did not load; the table has the numbers."));
    return;
  }
  const withErrors = Array.isArray(spec.low) && Array.isArray(spec.high);
  const points = spec.values.map((y, i) =>
    withErrors ? { y: y, yMin: spec.low[i], yMax: spec.high[i] } : y);
  const dataset = {
    label: spec.y_title,
    data: points,
    backgroundColor: withErrors ? PALETTE.blue : PALETTE.orange,
    borderColor: PALETTE.black,
    borderWidth: 1,
  };
  if (withErrors) {
    dataset.errorBarColor = PALETTE.black;
    dataset.errorBarWhiskerColor = PALETTE.black;
    dataset.errorBarLineWidth = 2;
    dataset.errorBarWhiskerLineWidth = 2;
  }
  const threshold = spec.threshold || null;
  const chart = new window.Chart(canvas, {
    type: withErrors ? "barWithErrorBars" : "bar",
    data: { labels: spec.labels, datasets: [dataset] },
    plugins: threshold ? [THRESHOLD_LINE] : [],
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      plugins: {
        legend: { display: false },
        title: { display: true, text: spec.title },
        thresholdLine: threshold,
      },
      scales: {
        y: {
          title: { display: true, text: spec.y_title },
          suggestedMax: threshold ? threshold.value : undefined,
        },
      },
    },
  });
  canvas.dataset.drawn = String(chart.data.labels.length);
}

function cellValue(row, column, type) {
  const cell = row.children[column];
  if (type === "number") return Number(cell.dataset.value);
  return cell.textContent.trim().toLowerCase();
}

function sortTable(table, header) {
  const headers = Array.from(header.parentElement.children);
  const column = headers.indexOf(header);
  const type = header.querySelector("button").dataset.type;
  const ascending = header.getAttribute("aria-sort") !== "ascending";
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  rows.sort((a, b) => {
    const x = cellValue(a, column, type);
    const y = cellValue(b, column, type);
    const order = x < y ? -1 : x > y ? 1 : 0;
    return ascending ? order : -order;
  });
  rows.forEach((row) => body.appendChild(row));
  headers.forEach((h) => h.setAttribute("aria-sort", "none"));
  header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("canvas[id]").forEach(drawChart);
  document.querySelectorAll("table[data-sortable] th button").forEach((button) => {
    button.addEventListener("click", () => sortTable(button.closest("table"), button.closest("th")));
  });
  const seconds = Number(document.body.dataset.refreshSeconds || 0);
  if (seconds > 0) window.setTimeout(() => window.location.reload(), seconds * 1000);
});
