// State page: the step slider and the play button show the state after any step without a request.
// The heatmaps of the state take their z from the #state-frames JSON; the [steps x positions] grids move
// the outlined row (the shape named "step-line") to the step shown. figures.js draws the figures first.
const PLAY_INTERVAL_MS = 400;
let playing = null;

function stateFrames() {
  const element = document.getElementById("state-frames");
  return element ? JSON.parse(element.textContent) : null;
}

function showStep(step) {
  const frames = stateFrames();
  if (!frames) return;
  document.getElementById("state-step-label").textContent = frames.labels[step];
  const state = document.getElementById("figure-state");
  if (state && state.data) {
    const groups = frames.state[step];  // [groups][width][length]
    Plotly.restyle(state, { z: groups }, groups.map((_, g) => g));
    Plotly.relayout(state, { "title.text": `State after ${frames.labels[step]}` });
  }
  document.querySelectorAll(".figure.js-plotly-plot").forEach((figure) => {
    const shapes = (figure.layout && figure.layout.shapes) || [];
    const mark = shapes.findIndex((shape) => shape.name === "step-line");
    if (mark < 0) return;
    const rows = figure.data[0].y.length;
    Plotly.relayout(figure, {
      [`shapes[${mark}].y0`]: step - 0.5,
      [`shapes[${mark}].y1`]: step + 0.5,
      [`shapes[${mark}].visible`]: step < rows,
    });
  });
}

function stopPlaying() {
  if (playing === null) return;
  clearInterval(playing);
  playing = null;
  const button = document.getElementById("state-play");
  if (button) button.textContent = "play";
}

function play() {
  const slider = document.getElementById("state-step");
  if (Number(slider.value) >= Number(slider.max)) slider.value = slider.min;
  document.getElementById("state-play").textContent = "pause";
  showStep(Number(slider.value));
  playing = setInterval(() => {
    const next = Number(slider.value) + 1;
    if (next > Number(slider.max)) return stopPlaying();
    slider.value = next;
    showStep(next);
  }, PLAY_INTERVAL_MS);
}

document.addEventListener("input", (event) => {
  if (event.target.id !== "state-step") return;
  stopPlaying();
  showStep(Number(event.target.value));
});
document.addEventListener("click", (event) => {
  const button = event.target.closest("button");
  if (!button) return;
  if (button.id === "state-play") {
    if (playing === null) play();
    else stopPlaying();
  } else if (button.classList.contains("example") && document.getElementById("state")) {
    document.querySelector("#state textarea[name=text]").value = button.dataset.text;
    htmx.trigger("#state", "submit");
  }
});
document.addEventListener("htmx:beforeSwap", stopPlaying);  // results or the whole page: its frames go
