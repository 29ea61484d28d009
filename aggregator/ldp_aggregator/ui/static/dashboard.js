// The dashboard's only script: draws the charts (Chart.js, vendored: bars with error bars,
// and trends with their interval bands), sorts tables and reloads a page while a job runs.
// Every chart's numbers are also in a table beside it.
"use strict";

// Okabe and Ito's palette, told apart under the common colour-vision deficiencies.
const PALETTE = { blue: "#0072B2", orange: "#E69F00", vermillion: "#D55E00", black: "#000000" };
const BAND = "rgba(0, 114, 178, 0.25)";  // the blue, a quarter opaque

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

// A trend's interval band, drawn under its line: for each run of consecutive released
// periods, the area between their interval bounds (a lone period between gaps: a narrow
// bar). A withheld period has no estimate (null): nothing is drawn there, so it is a gap
// in both the line and the band, never a zero.
const INTERVAL_BAND = {
  id: "intervalBand",
  beforeDatasetsDraw(chart) {
    const { ctx, scales } = chart;
    const { low, high } = chart.data.datasets[0];
    const x = (i) => scales.x.getPixelForValue(i);
    const y = (v) => scales.y.getPixelForValue(v);
    ctx.save();
    ctx.fillStyle = BAND;
    let runs = 0;
    for (let i = 0; i < low.length; i += 1) {
      if (low[i] === null || high[i] === null) continue;
      let j = i;
      while (j + 1 < low.length && low[j + 1] !== null && high[j + 1] !== null) j += 1;
      ctx.beginPath();
      if (i === j) {
        ctx.rect(x(i) - 5, y(high[i]), 10, y(low[i]) - y(high[i]));
      } else {
        for (let k = i; k <= j; k += 1) ctx.lineTo(x(k), y(high[k]));
        for (let k = j; k >= i; k -= 1) ctx.lineTo(x(k), y(low[k]));
        ctx.closePath();
      }
      ctx.fill();
      runs += 1;
      i = j;
    }
    ctx.restore();
    chart.canvas.dataset.bands = String(runs);
  },
};

// What every chart shares: drawn at once, the size of its box, no legend, its title; and
// its own plugins' options and scales.
function chartOptions(spec, plugins, scales) {
  return {
    animation: false,
    responsive: true,
    maintainAspectRatio: false,
    plugins: { legend: { display: false }, title: { display: true, text: spec.title }, ...plugins },
    scales: scales,
  };
}

// A trend (spec.kind "trend"): one point per period, joined where periods follow each
// other, over its interval band; the axis takes in every interval.
function drawTrend(canvas, spec) {
  const bounds = spec.low.concat(spec.high).filter((v) => v !== null);
  const interval = (i) => `[${spec.low[i].toPrecision(4)}, ${spec.high[i].toPrecision(4)}]`;
  const chart = new window.Chart(canvas, {
    type: "line",
    data: {
      labels: spec.labels,
      datasets: [{
        label: spec.y_title,
        data: spec.values,
        low: spec.low,
        high: spec.high,
        borderColor: PALETTE.blue,
        backgroundColor: PALETTE.blue,
        borderWidth: 2,
        pointRadius: 3,
        spanGaps: false,
      }],
    },
    plugins: [INTERVAL_BAND],
    options: chartOptions(spec, {
      tooltip: { callbacks: { afterLabel: (item) => `interval ${interval(item.dataIndex)}` } },
    }, {
      x: { title: { display: true, text: spec.x_title } },
      y: {
        title: { display: true, text: spec.y_title },
        suggestedMin: spec.y_min ?? (bounds.length ? Math.min(...bounds) : undefined),
        suggestedMax: bounds.length ? Math.max(...bounds) : undefined,
      },
    }),
  });
  canvas.dataset.drawn = String(chart.data.labels.length);
  canvas.dataset.gaps = String(spec.values.filter((v) => v === null).length);
}

function drawChart(canvas) {
  const source = document.getElementById(canvas.id + "-data");
  if (!source) return;
  const spec = JSON.parse(source.textContent);
  if (typeof window.Chart === "undefined") {
    canvas.replaceWith(document.createTextNode("The chart library did not load; the table has the numbers."));
    return;
  }
  if (spec.kind === "trend") {
    drawTrend(canvas, spec);
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
    options: chartOptions(spec, { thresholdLine: threshold }, {
      y: {
        title: { display: true, text: spec.y_title },
        suggestedMin: spec.y_min ?? undefined,
        suggestedMax: threshold ? threshold.value : (spec.y_max ?? undefined),
      },
    }),
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
