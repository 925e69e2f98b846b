// Plotly figures: every [data-figure] element is drawn from the JSON <script> it names.
//
// htmx gives a swapped-in element the class and style of the old element with the same id until the swap
// settles, then puts its own back, which would strip Plotly's js-plotly-plot class from a figure drawn
// earlier (its layers would stack instead of overlaying). So figures are drawn once the swap has settled,
// purged when htmx removes them, and redrawn from their JSON when history restores a page snapshot. The JSON
// leaves out Plotly's default template, which every page loads once (FIGURE_TEMPLATE, /vendor/figure-template.js).
const PLOT_CONFIG = { responsive: true, displaylogo: false };

function figureElements(root) {
  const elements = [...root.querySelectorAll("[data-figure]")];
  if (root.matches && root.matches("[data-figure]")) elements.unshift(root);
  return elements;
}

function drawFigures(root) {
  figureElements(root).forEach((element) => {
    const figure = JSON.parse(document.getElementById(element.dataset.figure).textContent);
    figure.layout.template ??= FIGURE_TEMPLATE;
    Plotly.react(element, figure.data, figure.layout, PLOT_CONFIG);
  });
}

document.addEventListener("htmx:afterSettle", (event) => drawFigures(event.target));
document.addEventListener("htmx:beforeCleanupElement", (event) => {
  if (event.target.classList && event.target.classList.contains("js-plotly-plot")) Plotly.purge(event.target);
});
document.addEventListener("htmx:historyRestore", () => {
  figureElements(document).forEach((element) => element.replaceChildren());  // a snapshot's SVG is not a live plot
  drawFigures(document);
});
document.addEventListener("DOMContentLoaded", () => drawFigures(document));
