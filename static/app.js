// Renders the Plotly figures that htmx swaps in, and keeps small controls in step.
function renderFigures(root) {
  root.querySelectorAll("[data-figure]").forEach((element) => {
    const figure = JSON.parse(document.getElementById(element.dataset.figure).textContent);
    Plotly.react(element, figure.data, figure.layout, { responsive: true, displaylogo: false });
  });
}

function syncSlots() {
  const slider = document.querySelector("input[name=memory_size]");
  if (!slider) return;
  document.getElementById("memory-size-value").textContent = slider.value;
  document.querySelectorAll(".slot").forEach((label) => {
    const present = Number(label.dataset.slot) < Number(slider.value);
    label.hidden = !present;
    if (!present) label.querySelector("input").checked = false;
  });
}

// A successful swap elsewhere clears old errors; an error fragment swaps into #errors itself.
document.addEventListener("htmx:afterSwap", (event) => {
  if (event.detail.target.id !== "errors") document.getElementById("errors").replaceChildren();
  renderFigures(event.detail.target);
});
document.addEventListener("input", (event) => {
  if (event.target.name === "memory_size") syncSlots();
});
document.addEventListener("change", (event) => {
  if (event.target.id === "demo" && event.target.value) {
    document.querySelector("textarea[name=text]").value = event.target.value;
    htmx.trigger("#explore", "submit");
  }
});
document.addEventListener("DOMContentLoaded", () => { syncSlots(); renderFigures(document); });
