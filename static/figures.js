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

// A title longer than its figure is wide is wrapped onto more lines (Plotly draws one line and lets the rest run
// off the figure); then, once drawn, a title that rises above its figure (Plotly lifts a title of several lines
// anchored at the top) is brought down into it, and the top margin grows until the title clears the column labels
// drawn above the plot, the figure's height with it so the plot keeps its size.
const TITLE_PX = 17;  // Plotly's title font size
const GAP_PX = 6;
const titleCanvas = document.createElement("canvas").getContext("2d");
function wrappedLines(text, width) {
  const lines = [""];
  text.split(" ").forEach((word) => {
    const line = lines[lines.length - 1] ? `${lines[lines.length - 1]} ${word}` : word;
    if (lines[lines.length - 1] && titleCanvas.measureText(line.replace(/<[^>]+>/g, "")).width > width) lines.push(word);
    else lines[lines.length - 1] = line;
  });
  return lines;
}
function wrapTitle(element, layout) {
  const title = layout.title;
  if (!title || !title.text) return;
  titleCanvas.font = `${TITLE_PX}px "Open Sans", verdana, arial, sans-serif`;
  const width = (layout.width || element.clientWidth || 700) - 40;
  const lines = title.text.split("<br>").flatMap((line) => {
    const sub = line.match(/^<sub>(.*)<\/sub>$/);  // a subtitle, in a smaller font: wrapped inside its own <sub>
    return sub ? wrappedLines(sub[1], width * 1.4).map((part) => `<sub>${part}</sub>`) : wrappedLines(line, width);
  });
  title.text = lines.join("<br>");
}
function fitTitle(element) {
  const title = element.querySelector(".gtitle");
  if (!title || !element._fullLayout) return;
  const box = element.getBoundingClientRect();
  const rect = title.getBoundingClientRect();
  const down = Math.max(0, Math.ceil(box.top + GAP_PX - rect.top));
  const plotTop = box.top + element._fullLayout._size.t;
  const labelsAbove = [...element.querySelectorAll(".xtick text, .x2tick text")]
    .map((label) => label.getBoundingClientRect()).filter((r) => r.width && r.top < plotTop);
  const clear = labelsAbove.length ? Math.min(...labelsAbove.map((r) => r.top)) : plotTop;
  const extra = Math.max(0, Math.ceil(rect.bottom + down + GAP_PX - clear));
  if (!down && !extra) return;
  const layout = element.layout;
  const update = { "title.pad.t": ((layout.title && layout.title.pad && layout.title.pad.t) || 0) + down };
  if (extra) {
    update["margin.t"] = element._fullLayout.margin.t + extra;
    if (layout.height) update.height = layout.height + extra;
  }
  return Plotly.relayout(element, update);
}

function drawFigures(root) {
  figureElements(root).forEach((element) => {
    const figure = JSON.parse(document.getElementById(element.dataset.figure).textContent);
    figure.layout.template ??= FIGURE_TEMPLATE;
    wrapTitle(element, figure.layout);
    element.dataset.drawn = "false";
    Plotly.react(element, figure.data, figure.layout, PLOT_CONFIG)
      .then(() => fitTitle(element))
      .then(() => { element.dataset.drawn = "true"; });
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
